/* A small ABI-2 plugin written in C++, for the tests: device `cxx` runs elementwise f32
 * modules (parameter, constant, add, subtract, multiply, maximum, minimum, negate, abs)
 * with a little HLO-text interpreter of its own. It exists to show that the ABI holds
 * across languages and allocators: every handle it gives the host (client, executable,
 * buffer, error) is made with operator new and holds std::vector / std::string, and the
 * host never frees one itself but hands it back to the plugin's destroy entries. No C++
 * exception crosses the C boundary: each entry catches and turns it into an error.
 * It needs nothing from kiln but include/kiln/plugin.h, like an outside vendor's plugin.
 * Anything outside its subset (another type, another op, a called computation) is
 * UNIMPLEMENTED from compile, so the host places such modules elsewhere.
 * Built a second time with CXX_NULL_BUFFER_SHAPE, its table lacks a mandatory entry,
 * which the loader must refuse (tests/unit/test_plugin.c). */
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "kiln/plugin.h"

struct kiln_plugin_error {
  int code;
  std::string message;
};

struct kiln_plugin_client {
  kiln_plugin_host host; /* fields beyond the host's struct_size stay zero */
  std::string device_description;
};

struct kiln_plugin_buffer {
  std::vector<size_t> dims;
  std::vector<float> data;
};

namespace {

/* One instruction of the entry computation: result = op(operands), all f32 arrays of
 * one shape (HLO has no implicit broadcasting), or a constant / parameter. */
struct instr {
  std::string op;
  std::vector<size_t> dims;
  std::vector<int> operands; /* indices into the instruction list */
  long parameter;            /* parameter */
  std::vector<float> value;  /* constant */
};

}  // namespace

struct kiln_plugin_executable {
  std::vector<instr> instrs;
  int root;
  int n_params;
};

namespace {

kiln_plugin_error *make_error(int code, const std::string &msg) {
  try {
    kiln_plugin_error *e = new kiln_plugin_error;
    e->code = code;
    e->message = msg;
    return e;
  } catch (...) {
    return NULL; /* out of memory while reporting: nothing better to do */
  }
}

/* Runs f, turning any exception into an error: none may cross into the C host. */
template <typename F>
kiln_plugin_error *guard(F f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return make_error(KILN_PLUGIN_ERR_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception &e) {
    return make_error(KILN_PLUGIN_ERR_INTERNAL, e.what());
  } catch (...) {
    return make_error(KILN_PLUGIN_ERR_INTERNAL, "unknown C++ exception");
  }
}

const char *const kOps[] = {"parameter", "constant", "add", "subtract", "multiply", "maximum", "minimum",
                            "negate", "abs"};

bool known_op(const std::string &op) {
  for (size_t i = 0; i < sizeof kOps / sizeof kOps[0]; i++)
    if (op == kOps[i]) return true;
  return false;
}

size_t count(const std::vector<size_t> &dims) {
  size_t n = 1;
  for (size_t i = 0; i < dims.size(); i++) n *= dims[i];
  return n;
}

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

/* "f32[2,3]{1,0}" at the start of s -> dims; false unless f32. */
bool parse_shape(const std::string &s, std::vector<size_t> *dims) {
  if (s.compare(0, 4, "f32[") != 0) return false;
  size_t close = s.find(']');
  if (close == std::string::npos) return false;
  dims->clear();
  std::string inner = s.substr(4, close - 4);
  size_t at = 0;
  while (at < inner.size()) {
    size_t comma = inner.find(',', at);
    std::string d = trim(inner.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (d.empty()) return false;
    dims->push_back(std::strtoul(d.c_str(), NULL, 10));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return true;
}

/* The numbers of a constant's literal text ("{ { 1, 2 }, { 3, 4 } }" or "2"), in order. */
std::vector<float> parse_numbers(const std::string &s) {
  std::vector<float> v;
  const char *p = s.c_str();
  while (*p) {
    if (*p == '-' || *p == '+' || *p == '.' || (*p >= '0' && *p <= '9') || *p == 'i' || *p == 'n') {
      char *end = NULL;
      double x = std::strtod(p, &end);
      if (end == p) {
        p++;
        continue;
      }
      v.push_back(static_cast<float>(x));
      p = end;
    } else {
      p++;
    }
  }
  return v;
}

/* Parses the ENTRY computation of kiln's printed HLO text. Returns NULL, or
 * UNIMPLEMENTED naming what is outside the subset. */
kiln_plugin_error *parse_module(const std::string &text, kiln_plugin_executable *x) {
  size_t entry = text.find("\nENTRY ");
  if (entry == std::string::npos) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "no ENTRY computation");
  /* Another computation means a called one (reduce, map, call...): not this device. */
  size_t brace = text.find('{', text.find('\n') + 1);
  if (brace < entry) return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "cxx runs single-computation modules only");
  std::map<std::string, int> index;
  x->root = -1;
  x->n_params = 0;
  size_t at = text.find('\n', entry + 1) + 1;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    std::string line = trim(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    at = nl == std::string::npos ? text.size() : nl + 1;
    if (line == "}") break;
    if (line.empty()) continue;
    bool is_root = line.compare(0, 5, "ROOT ") == 0;
    if (is_root) line = trim(line.substr(5));
    size_t eq = line.find(" = ");
    if (eq == std::string::npos) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "cannot read: " + line);
    std::string name = line.substr(line[0] == '%' ? 1 : 0, eq - (line[0] == '%' ? 1 : 0));
    std::string rest = line.substr(eq + 3);
    instr ins;
    if (!parse_shape(rest, &ins.dims))
      return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "cxx computes f32 arrays only: " + name);
    size_t space = rest.find(' ');
    size_t paren = rest.find('(', space);
    if (space == std::string::npos || paren == std::string::npos)
      return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "cannot read: " + line);
    ins.op = trim(rest.substr(space + 1, paren - space - 1));
    if (!known_op(ins.op)) return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "cxx does not implement " + ins.op);
    int depth = 0;
    size_t close = paren;
    for (; close < rest.size(); close++) {
      if (rest[close] == '(') depth++;
      if (rest[close] == ')' && --depth == 0) break;
    }
    std::string args = rest.substr(paren + 1, close - paren - 1);
    ins.parameter = -1;
    if (ins.op == "parameter") {
      ins.parameter = std::strtol(args.c_str(), NULL, 10);
      x->n_params++;
    } else if (ins.op == "constant") {
      ins.value = parse_numbers(args);
      if (ins.value.size() != count(ins.dims))
        return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "constant " + name + " has the wrong element count");
    } else {
      for (size_t p = args.find('%'); p != std::string::npos; p = args.find('%', p + 1)) {
        size_t end = args.find_first_of(", )", p);
        std::string operand = args.substr(p + 1, end == std::string::npos ? std::string::npos : end - p - 1);
        std::map<std::string, int>::const_iterator it = index.find(operand);
        if (it == index.end()) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "unknown operand " + operand);
        if (x->instrs[it->second].dims != ins.dims)
          return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "cxx runs same-shape elementwise ops only");
        ins.operands.push_back(it->second);
      }
      size_t want = ins.op == "negate" || ins.op == "abs" ? 1 : 2;
      if (ins.operands.size() != want)
        return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "wrong operand count for " + name);
    }
    index[name] = static_cast<int>(x->instrs.size());
    if (is_root) x->root = static_cast<int>(x->instrs.size());
    x->instrs.push_back(ins);
  }
  if (x->root < 0) return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "cxx returns one array (no tuple root)");
  return NULL;
}

float apply(const std::string &op, float a, float b) {
  if (op == "add") return a + b;
  if (op == "subtract") return a - b;
  if (op == "multiply") return a * b;
  if (op == "maximum") return a > b ? a : b;
  if (op == "minimum") return a < b ? a : b;
  if (op == "negate") return -a;
  return a < 0 ? -a : a; /* abs */
}

void say(const kiln_plugin_client *c, int level, const char *msg) {
  if (c->host.log) c->host.log(c->host.host_data, level, msg);
}

/* ---- the entries ---- */

int c_error_code(const kiln_plugin_error *e) { return e->code; }
const char *c_error_message(const kiln_plugin_error *e) { return e->message.c_str(); }
void c_error_destroy(kiln_plugin_error *e) { delete e; }

kiln_plugin_error *c_client_create(kiln_plugin_client_create_args *a) {
  return guard([&]() -> kiln_plugin_error * {
    kiln_plugin_client *c = new kiln_plugin_client;
    std::memset(&c->host, 0, sizeof c->host);
    if (a->host) std::memcpy(&c->host, a->host, a->host->struct_size < sizeof c->host ? a->host->struct_size
                                                                                     : sizeof c->host);
    c->device_description = "C++ test plugin (elementwise f32; new/delete, std::vector)";
    a->client = c;
    say(c, KILN_PLUGIN_LOG_DEBUG, "cxx client created");
    return NULL;
  });
}

void c_client_destroy(kiln_plugin_client *c) { delete c; }

kiln_plugin_error *c_device_count(kiln_plugin_device_count_args *a) {
  a->n_devices = 1;
  return NULL;
}

kiln_plugin_error *c_device_info(kiln_plugin_device_info_args *a) {
  if (a->device != 0) return make_error(KILN_PLUGIN_ERR_NOT_FOUND, "no such device");
  a->name = "cxx";
  a->description = a->client->device_description.c_str();
  return NULL;
}

kiln_plugin_error *c_op_supported(kiln_plugin_op_supported_args *a) {
  a->supported = a->dtype == KILN_DTYPE_F32 && known_op(a->opcode);
  return NULL;
}

kiln_plugin_error *c_compile(kiln_plugin_compile_args *a) {
  return guard([&]() -> kiln_plugin_error * {
    if (std::strcmp(a->format, KILN_PLUGIN_FORMAT_HLO_TEXT) != 0)
      return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "hlo-text only");
    kiln_plugin_executable *x = new kiln_plugin_executable;
    kiln_plugin_error *e = parse_module(std::string(a->module, a->module_len), x);
    if (e) {
      delete x;
      return e;
    }
    a->executable = x;
    return NULL;
  });
}

void c_executable_destroy(kiln_plugin_client *, kiln_plugin_executable *x) { delete x; }

kiln_plugin_error *c_execute(kiln_plugin_execute_args *a) {
  return guard([&]() -> kiln_plugin_error * {
    const kiln_plugin_executable *x = a->executable;
    a->n_results = 0;
    if (a->n_args != static_cast<size_t>(x->n_params))
      return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "wrong number of arguments");
    if (a->max_results < 1) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "no room for the result");
    std::vector<std::vector<float> > values(x->instrs.size());
    for (size_t i = 0; i < x->instrs.size(); i++) {
      const instr &ins = x->instrs[i];
      if (ins.op == "parameter") {
        if (ins.parameter < 0 || static_cast<size_t>(ins.parameter) >= a->n_args)
          return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "parameter number out of range");
        const kiln_plugin_buffer *b = a->args[ins.parameter];
        if (b->dims != ins.dims) return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "argument has the wrong shape");
        values[i] = b->data;
      } else if (ins.op == "constant") {
        values[i] = ins.value;
      } else {
        const std::vector<float> &l = values[ins.operands[0]];
        const std::vector<float> &r = values[ins.operands.size() > 1 ? ins.operands[1] : ins.operands[0]];
        values[i].resize(l.size());
        for (size_t k = 0; k < l.size(); k++) values[i][k] = apply(ins.op, l[k], r[k]);
      }
    }
    kiln_plugin_buffer *out = new kiln_plugin_buffer;
    out->dims = x->instrs[x->root].dims;
    out->data.swap(values[x->root]);
    a->results[0] = out;
    a->n_results = 1;
    return NULL;
  });
}

kiln_plugin_error *c_buffer_from_host(kiln_plugin_buffer_from_host_args *a) {
  return guard([&]() -> kiln_plugin_error * {
    if (a->dtype != KILN_DTYPE_F32) return make_error(KILN_PLUGIN_ERR_UNIMPLEMENTED, "cxx holds f32 only");
    kiln_plugin_buffer *b = new kiln_plugin_buffer;
    b->dims.assign(a->dims, a->dims + a->rank);
    if (count(b->dims) * sizeof(float) != a->n_bytes) {
      delete b;
      return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "byte size does not match the shape");
    }
    b->data.resize(count(b->dims));
    if (a->data && a->n_bytes) std::memcpy(&b->data[0], a->data, a->n_bytes);
    a->buffer = b;
    return NULL;
  });
}

kiln_plugin_error *c_buffer_to_host(kiln_plugin_buffer_to_host_args *a) {
  if (a->n_bytes != a->buffer->data.size() * sizeof(float))
    return make_error(KILN_PLUGIN_ERR_INVALID_ARGUMENT, "byte size does not match the buffer");
  if (a->n_bytes) std::memcpy(a->dst, &a->buffer->data[0], a->n_bytes);
  return NULL;
}

#ifndef CXX_NULL_BUFFER_SHAPE
kiln_plugin_error *c_buffer_shape(kiln_plugin_buffer_shape_args *a) {
  if (a->buffer->dims.size() > KILN_PLUGIN_MAX_RANK) return make_error(KILN_PLUGIN_ERR_OUT_OF_RANGE, "rank");
  a->dtype = KILN_DTYPE_F32;
  a->rank = a->buffer->dims.size();
  for (size_t i = 0; i < a->rank; i++) a->dims[i] = a->buffer->dims[i];
  a->device = 0;
  return NULL;
}
#endif

void c_buffer_destroy(kiln_plugin_client *, kiln_plugin_buffer *b) { delete b; }

const kiln_plugin_api cxx_api = {
    sizeof(kiln_plugin_api), KILN_PLUGIN_API_MAJOR, KILN_PLUGIN_API_MINOR, "cxx", "0.1",
    c_error_code, c_error_message, c_error_destroy,
    c_client_create, c_client_destroy, c_device_count, c_device_info,
    c_compile, c_executable_destroy, c_execute,
#ifdef CXX_NULL_BUFFER_SHAPE
    c_buffer_from_host, c_buffer_to_host, NULL, c_buffer_destroy,
#else
    c_buffer_from_host, c_buffer_to_host, c_buffer_shape, c_buffer_destroy,
#endif
    c_op_supported, NULL};

}  // namespace

extern "C" KILN_PLUGIN_EXPORT kiln_plugin_error *kiln_plugin_init(const kiln_plugin_api **api) {
  *api = &cxx_api;
  return NULL;
}
