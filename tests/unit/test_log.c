/* The log module: the stderr format tests and scripts match ("kiln: warning: ..."),
 * info gated by log_verbose, and per-thread sinks -- two threads with two sinks each
 * get only their own messages, a sink's level filters (stderr too when it has no
 * function), and the previous setting comes back exactly when restored. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "check.h"
#include "check_util.h"


static void log_three(void) {
  log_info("note %d", 1);
  log_warning("careful with %s", "x");
  log_error("broke %d", 2);
}

static void test_default_stderr_format(void) {
  log_verbose = 0;
  char *quiet = check_capture_stderr(log_three);
  CHECK(strcmp(quiet, "kiln: warning: careful with x\nkiln: error: broke 2\n") == 0);
  free(quiet);
  log_verbose = 1;
  char *verbose = check_capture_stderr(log_three);
  CHECK(strcmp(verbose, "kiln: note 1\nkiln: warning: careful with x\nkiln: error: broke 2\n") == 0);
  free(verbose);
  log_verbose = 0;
}

/* A sink without a function still filters what reaches stderr, info included. */
static void test_level_only_sink_filters_stderr(void) {
  log_sink errors_only = {NULL, NULL, LOG_ERROR};
  log_set_thread_sink(&errors_only, NULL, NULL);
  char *text = check_capture_stderr(log_three);
  CHECK(strcmp(text, "kiln: error: broke 2\n") == 0);
  free(text);
  log_sink everything = {NULL, NULL, LOG_INFO};
  log_set_thread_sink(&everything, NULL, NULL);
  text = check_capture_stderr(log_three); /* log_verbose is 0, the sink asks for info */
  CHECK(strncmp(text, "kiln: note 1\n", 13) == 0);
  free(text);
  log_set_thread_sink(NULL, NULL, NULL);
}

typedef struct collected {
  char text[8192];
  int count;
  log_level last_level;
} collected;

static void collect(void *user, log_level level, const char *message) {
  collected *c = user;
  size_t n = strlen(c->text);
  snprintf(c->text + n, sizeof c->text - n, "%s|", message);
  c->count++;
  c->last_level = level;
}

typedef struct worker {
  const char *tag;
  collected got;
} worker;

static void *log_from_thread(void *arg) {
  worker *w = arg;
  log_sink s = {collect, &w->got, LOG_WARNING};
  log_set_thread_sink(&s, NULL, NULL);
  for (int i = 0; i < 50; i++) {
    log_warning("%s %d", w->tag, i);
    log_info("%s dropped", w->tag); /* below the sink's level */
    sched_yield();
  }
  log_set_thread_sink(NULL, NULL, NULL);
  return NULL;
}

static void test_two_threads_two_sinks(void) {
  worker a = {.tag = "alpha"}, b = {.tag = "beta"};
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, log_from_thread, &a) == 0);
  CHECK(pthread_create(&tb, NULL, log_from_thread, &b) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK(a.got.count == 50 && b.got.count == 50);
  CHECK(strstr(a.got.text, "beta") == NULL && strstr(b.got.text, "alpha") == NULL);
  CHECK(strncmp(a.got.text, "alpha 0|alpha 1|", 16) == 0);
  CHECK(strstr(a.got.text, "dropped") == NULL);
  CHECK(a.got.last_level == LOG_WARNING);
}

static void test_restore_is_exact(void) {
  log_sink prev;
  bool had = true;
  collected outer = {{0}, 0, LOG_INFO}, inner = {{0}, 0, LOG_INFO};
  log_sink so = {collect, &outer, LOG_INFO};
  log_set_thread_sink(&so, &prev, &had);
  CHECK(!had && prev.fn == NULL); /* the thread had the default */
  log_sink si = {collect, &inner, LOG_ERROR};
  log_sink saved;
  bool saved_had = false;
  log_set_thread_sink(&si, &saved, &saved_had);
  CHECK(saved_had && saved.fn == collect && saved.user == &outer && saved.min_level == LOG_INFO);
  log_warning("filtered by inner");
  log_error("to inner");
  log_set_thread_sink(saved_had ? &saved : NULL, NULL, NULL);
  log_info("to outer");
  CHECK(strcmp(inner.text, "to inner|") == 0);
  CHECK(strcmp(outer.text, "to outer|") == 0);
  /* Back to the default: messages reach stderr again, nothing reaches the sinks. */
  log_set_thread_sink(had ? &prev : NULL, NULL, NULL);
  char *text = check_capture_stderr(log_three);
  CHECK(strcmp(text, "kiln: warning: careful with x\nkiln: error: broke 2\n") == 0);
  free(text);
  CHECK(outer.count == 1 && inner.count == 1);
  log_sink now;
  bool now_had = true;
  log_set_thread_sink(NULL, &now, &now_had);
  CHECK(!now_had);
}

/* Long messages are delivered whole. */
static void test_long_message(void) {
  static char big[3000];
  memset(big, 'x', sizeof big - 1);
  collected *c = calloc(1, sizeof *c);
  if (!c) abort();
  log_sink s = {collect, c, LOG_INFO};
  log_set_thread_sink(&s, NULL, NULL);
  log_warning("[%s]", big);
  log_set_thread_sink(NULL, NULL, NULL);
  CHECK(c->count == 1 && strlen(c->text) == sizeof big - 1 + 3);
  free(c);
}

TEST_MAIN(TEST(test_default_stderr_format), TEST(test_level_only_sink_filters_stderr),
          TEST(test_two_threads_two_sinks), TEST(test_restore_is_exact), TEST(test_long_message))
