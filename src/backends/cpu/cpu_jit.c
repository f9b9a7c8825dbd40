/* LLJIT setup for the cpu backend (see cpu_jit.h). The native target, the shared LLJIT
 * and a target machine for the data layout are made once per process. Compiling is done
 * here rather than by LLJIT's IR layer: every module of a batch is verified, optimised
 * and turned into an object file on its own thread with its own target machine (a
 * target machine is not documented as shareable), and the objects are handed to LLJIT,
 * which only links them. LLVM's time grows with the code, so a large executable's
 * kernels, spread over several modules, compile in parallel. ORC is thread-safe for
 * adding objects and looking symbols up. */
#include "backends/cpu/cpu_jit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "backends/cpu/cpu_runtime.h"

struct cpu_jit {
  LLVMOrcResourceTrackerRef tracker;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char *host_triple, *host_cpu, *host_features;
static const char *init_error;
static char *init_error_owned;
static LLVMOrcLLJITRef shared_jit;
static LLVMTargetMachineRef optimiser_tm; /* only for the data layout of new modules */
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;

static kiln_status new_target_machine(LLVMTargetMachineRef *out);
static kiln_status create_shared_jit(void);

static void init_native(void) {
  if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
    init_error = "LLVM has no code generator for this host";
    return;
  }
  host_triple = LLVMGetDefaultTargetTriple();
  host_cpu = LLVMGetHostCPUName();
  host_features = LLVMGetHostCPUFeatures();
  kiln_status st = new_target_machine(&optimiser_tm);
  if (!st) st = create_shared_jit();
  if (st) {
    init_error_owned = strdup(kiln_status_message(st));
    init_error = init_error_owned ? init_error_owned : "cannot set up the LLVM JIT";
    kiln_status_free(st);
  }
}

void cpu_jit_shutdown(void) {
  if (shared_jit) {
    LLVMErrorRef err = LLVMOrcDisposeLLJIT(shared_jit);
    if (err) LLVMConsumeError(err);
    shared_jit = NULL;
  }
  if (optimiser_tm) LLVMDisposeTargetMachine(optimiser_tm);
  optimiser_tm = NULL;
  LLVMDisposeMessage(host_triple);
  LLVMDisposeMessage(host_cpu);
  LLVMDisposeMessage(host_features);
  free(init_error_owned);
  host_triple = host_cpu = host_features = init_error_owned = NULL;
  init_error = "the JIT has been shut down"; /* a compile after this fails cleanly */
}

static kiln_status ensure_init(void) {
  pthread_once(&init_once, init_native);
  if (init_error) return status_error(KILN_UNIMPLEMENTED, "cpu: %s", init_error);
  return NULL;
}

static kiln_status llvm_error(LLVMErrorRef err, const char *what) {
  char *msg = LLVMGetErrorMessage(err);
  kiln_status st = status_error(KILN_INTERNAL, "cpu: %s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
  return st;
}

static kiln_status new_target_machine(LLVMTargetMachineRef *out) {
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(host_triple, &target, &err)) {
    kiln_status st = status_error(KILN_INTERNAL, "cpu: no LLVM target for %s: %s", host_triple, err);
    LLVMDisposeMessage(err);
    return st;
  }
  *out = LLVMCreateTargetMachine(target, host_triple, host_cpu, host_features, LLVMCodeGenLevelAggressive,
                                 LLVMRelocDefault, LLVMCodeModelJITDefault);
  if (!*out) return status_error(KILN_INTERNAL, "cpu: cannot create an LLVM target machine for %s", host_cpu);
  return NULL;
}

kiln_status cpu_jit_new_module(const char *name, cpu_jit_module *out) {
  memset(out, 0, sizeof *out);
  TRY(ensure_init());
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  out->tsc = tsc;
  out->ctx = LLVMOrcThreadSafeContextGetContext(tsc);
  out->module = LLVMModuleCreateWithNameInContext(name, out->ctx);
  LLVMSetTarget(out->module, host_triple);
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(optimiser_tm);
  char *layout_text = LLVMCopyStringRepOfTargetData(layout);
  LLVMSetDataLayout(out->module, layout_text);
  LLVMDisposeMessage(layout_text);
  LLVMDisposeTargetData(layout);
  return NULL;
}

void cpu_jit_module_discard(cpu_jit_module *m) {
  if (m->module) LLVMDisposeModule(m->module);
  if (m->tsc) LLVMOrcDisposeThreadSafeContext(m->tsc);
  memset(m, 0, sizeof *m);
}

#define PROCESS_SPECIFIC "kiln.process_addresses"

void cpu_jit_mark_process_specific(LLVMModuleRef m) {
  if (LLVMGetNamedMetadata(m, PROCESS_SPECIFIC, strlen(PROCESS_SPECIFIC))) return;
  LLVMAddNamedMetadataOperand(m, PROCESS_SPECIFIC, LLVMMDNodeInContext(LLVMGetModuleContext(m), NULL, 0));
}

bool cpu_jit_is_process_specific(const cpu_jit_module *m) {
  return m->module && LLVMGetNamedMetadata(m->module, PROCESS_SPECIFIC, strlen(PROCESS_SPECIFIC)) != NULL;
}

static kiln_status optimise(LLVMModuleRef module, LLVMTargetMachineRef tm) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
  LLVMErrorRef err = LLVMRunPasses(module, "default<O3>", tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (err) return llvm_error(err, "optimising kernels");
  return NULL;
}

/* One module's way to an object file, run on its own thread: the module and its
 * context are freed here whatever happens. */
typedef struct compile_job {
  cpu_jit_module m;
  LLVMMemoryBufferRef object;
  kiln_status st;
} compile_job;

static void *compile_module(void *arg) {
  compile_job *job = arg;
  char *msg = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMVerifyModule(job->m.module, LLVMReturnStatusAction, &msg))
    job->st = status_error(KILN_INTERNAL, "cpu: generated LLVM IR is invalid: %s", msg);
  LLVMDisposeMessage(msg);
  msg = NULL;
  if (!job->st) job->st = new_target_machine(&tm);
  if (!job->st) job->st = optimise(job->m.module, tm);
  if (!job->st && getenv("KILN_CPU_DUMP_IR")) {
    pthread_mutex_lock(&dump_lock);
    LLVMDumpModule(job->m.module);
    pthread_mutex_unlock(&dump_lock);
  }
  if (!job->st && LLVMTargetMachineEmitToMemoryBuffer(tm, job->m.module, LLVMObjectFile, &msg, &job->object)) {
    job->st = status_error(KILN_INTERNAL, "cpu: generating machine code: %s", msg ? msg : "unknown error");
    job->object = NULL;
  }
  LLVMDisposeMessage(msg);
  if (tm) LLVMDisposeTargetMachine(tm);
  cpu_jit_module_discard(&job->m);
  return NULL;
}

/* The runtime helpers and libm entry points generated code calls, by address: the
 * kiln binary need not export them for the JIT to find them. */
static kiln_status define_runtime_symbols(LLVMOrcLLJITRef lljit) {
  int n = cpu_runtime_symbol_count();
  LLVMJITCSymbolMapPair *pairs = calloc((size_t)n, sizeof *pairs);
  if (!pairs) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < n; i++) {
    const cpu_runtime_symbol *s = cpu_runtime_symbol_at(i);
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(lljit, s->name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)s->address;
    pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, (size_t)n);
  free(pairs);
  LLVMErrorRef err = LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(lljit), mu);
  if (err) return llvm_error(err, "defining runtime symbols");
  return NULL;
}

static kiln_status create_shared_jit(void) {
  LLVMOrcJITTargetMachineBuilderRef jtmb;
  LLVMErrorRef err = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (err) return llvm_error(err, "detecting the host");
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
  err = LLVMOrcCreateLLJIT(&shared_jit, builder);
  if (err) {
    shared_jit = NULL;
    return llvm_error(err, "creating the JIT");
  }
  TRY(define_runtime_symbols(shared_jit));
  LLVMOrcDefinitionGeneratorRef gen;
  err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(shared_jit), NULL, NULL);
  if (err) return llvm_error(err, "opening the process for symbol lookup");
  LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(shared_jit), gen);
  return NULL;
}

kiln_status cpu_jit_create_many(cpu_jit_module *mods, int n, cpu_jit **out) {
  return cpu_jit_create_many_keep(mods, n, out, NULL, NULL);
}

void cpu_jit_objects_free(cpu_jit_object *objs, int n) {
  if (!objs) return;
  for (int i = 0; i < n; i++) free(objs[i].data);
  free(objs);
}

/* Copies of the objects before LLJIT takes them (it owns and may free its buffers). */
static kiln_status copy_objects(const compile_job *jobs, int n, cpu_jit_object **objs, int *n_objs) {
  cpu_jit_object *o = calloc((size_t)n + 1, sizeof *o);
  if (!o) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < n; i++) {
    size_t size = LLVMGetBufferSize(jobs[i].object);
    o[i].size = size;
    o[i].data = malloc(size ? size : 1);
    if (!o[i].data) {
      cpu_jit_objects_free(o, i);
      return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
    }
    memcpy(o[i].data, LLVMGetBufferStart(jobs[i].object), size);
  }
  *objs = o;
  *n_objs = n;
  return NULL;
}

kiln_status cpu_jit_create_from_objects(const cpu_jit_object *objs, int n, cpu_jit **out) {
  *out = NULL;
  TRY(ensure_init());
  cpu_jit *j = calloc(1, sizeof *j);
  if (!j) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  j->tracker = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(shared_jit));
  for (int i = 0; i < n; i++) {
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(objs[i].data, objs[i].size, "kiln-cached");
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(shared_jit, j->tracker, buf); /* takes buf */
    if (err) {
      cpu_jit_destroy(j);
      return llvm_error(err, "adding cached kernels to the JIT");
    }
  }
  *out = j;
  return NULL;
}

kiln_status cpu_jit_host_description(char **out) {
  *out = NULL;
  TRY(ensure_init());
  size_t n = strlen(host_triple) + strlen(host_cpu) + strlen(host_features) + 8;
  char *s = malloc(n);
  if (!s) return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  snprintf(s, n, "%s %s %s", host_triple, host_cpu, host_features);
  *out = s;
  return NULL;
}

kiln_status cpu_jit_create_many_keep(cpu_jit_module *mods, int n, cpu_jit **out, cpu_jit_object **objs,
                                     int *n_objs) {
  *out = NULL;
  if (objs) {
    *objs = NULL;
    *n_objs = 0;
  }
  compile_job *jobs = calloc((size_t)n + 1, sizeof *jobs);
  pthread_t *threads = calloc((size_t)n + 1, sizeof *threads);
  bool *started = calloc((size_t)n + 1, sizeof *started);
  if (!jobs || !threads || !started) {
    for (int i = 0; i < n; i++) cpu_jit_module_discard(&mods[i]);
    free(jobs);
    free(threads);
    free(started);
    return status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    jobs[i].m = mods[i];
    memset(&mods[i], 0, sizeof mods[i]);
  }
  /* The last module compiles on this thread, and so does one whose thread cannot
   * start; this thread does its own share before it waits for the others, so all n
   * modules compile at once. */
  for (int i = 0; i + 1 < n; i++) started[i] = pthread_create(&threads[i], NULL, compile_module, &jobs[i]) == 0;
  for (int i = 0; i < n; i++)
    if (i + 1 == n || !started[i]) compile_module(&jobs[i]);
  for (int i = 0; i + 1 < n; i++)
    if (started[i]) pthread_join(threads[i], NULL);
  kiln_status st = NULL;
  for (int i = 0; i < n; i++)
    if (jobs[i].st && !st) st = jobs[i].st;
    else kiln_status_free(jobs[i].st);
  if (!st && objs) st = copy_objects(jobs, n, objs, n_objs);
  cpu_jit *j = st ? NULL : calloc(1, sizeof *j);
  if (!st && !j) st = status_error(KILN_RESOURCE_EXHAUSTED, "out of memory");
  if (j) j->tracker = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(shared_jit));
  for (int i = 0; i < n; i++) {
    if (!jobs[i].object) continue;
    if (st) {
      LLVMDisposeMemoryBuffer(jobs[i].object);
      continue;
    }
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(shared_jit, j->tracker, jobs[i].object); /* takes it */
    if (err) st = llvm_error(err, "adding the kernels to the JIT");
  }
  free(jobs);
  free(threads);
  free(started);
  if (st) {
    cpu_jit_destroy(j);
    if (objs) {
      cpu_jit_objects_free(*objs, *n_objs);
      *objs = NULL;
      *n_objs = 0;
    }
    return st;
  }
  *out = j;
  return NULL;
}

kiln_status cpu_jit_create(cpu_jit_module *m, cpu_jit **out) { return cpu_jit_create_many(m, 1, out); }

kiln_status cpu_jit_lookup(cpu_jit *j, const char *name, void **out) {
  (void)j;
  LLVMOrcExecutorAddress addr = 0;
  LLVMErrorRef err = LLVMOrcLLJITLookup(shared_jit, &addr, name);
  if (err) return llvm_error(err, "compiling kernels");
  *out = (void *)(uintptr_t)addr;
  return NULL;
}

void cpu_jit_destroy(cpu_jit *j) {
  if (!j) return;
  LLVMErrorRef err = LLVMOrcResourceTrackerRemove(j->tracker);
  if (err) LLVMConsumeError(err);
  LLVMOrcReleaseResourceTracker(j->tracker);
  free(j);
}
