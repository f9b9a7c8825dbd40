/* Character-level scanner for HLO text, shared by the module parser.
 *
 * HLO text is not regular enough for one token stream: "3x3", "0_1x1_0", "b01f_01io->b01f"
 * and verbatim attribute values each want their own scanning rules, so the lexer is a
 * cursor with small scanning primitives that the parser calls in context. It owns the
 * conventions every diagnostic follows: whitespace includes "//" line comments and the
 * block comments XLA prints as index annotations in long lists, positions are byte offsets turned into
 * 1-based line:col only when an error is reported, and messages read
 * "FILE:LINE:COL: expected X, got 'Y'". */
#ifndef KILN_HLO_LEXER_H
#define KILN_HLO_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hlo_lexer {
  const char *src;
  size_t len;
  size_t pos;
  const char *filename; /* for messages; never NULL */
} hlo_lexer;

void hlo_lex_init(hlo_lexer *lx, const char *src, size_t len, const char *filename);

/* Skips blanks, newlines and comments. An unterminated block comment is left in place so
 * that the next expectation reports it. */
void hlo_lex_skip_ws(hlo_lexer *lx);
/* Next significant character (after skipping whitespace), or -1 at the end. */
int hlo_lex_peek(hlo_lexer *lx);
/* Character at the cursor without skipping anything, or -1 at the end. */
int hlo_lex_peek_raw(const hlo_lexer *lx);
/* Skips whitespace, then consumes c if it is next. */
bool hlo_lex_accept(hlo_lexer *lx, char c);
/* Skips whitespace, then consumes the string s if it is next. */
bool hlo_lex_accept_str(hlo_lexer *lx, const char *s);
/* Skips whitespace, then consumes the identifier `word` if it is next as a whole word. */
bool hlo_lex_accept_word(hlo_lexer *lx, const char *word);
kiln_status hlo_lex_expect(hlo_lexer *lx, char c);

bool hlo_lex_is_ident_start(int c);
bool hlo_lex_is_ident_char(int c);
/* Skips whitespace; reads [A-Za-z_][A-Za-z0-9_.-]*, with one leading '%' accepted when
 * allow_percent. Returns false (consuming nothing) if no identifier is next. */
bool hlo_lex_ident(hlo_lexer *lx, bool allow_percent, const char **start, size_t *len);
/* Skips whitespace; reads a decimal integer with optional sign. `what` names the thing
 * expected in the error message. */
kiln_status hlo_lex_int64(hlo_lexer *lx, const char *what, int64_t *out);
/* Same, but without skipping whitespace first (for "3x3", "0_1" and similar). */
kiln_status hlo_lex_int64_here(hlo_lexer *lx, const char *what, int64_t *out);
/* Skips whitespace; reads a "..." string with C escapes. The decoded bytes (NUL-terminated,
 * malloc'ed) go to *out when out is not NULL; the raw span incl. quotes to *raw_start/len. */
kiln_status hlo_lex_string(hlo_lexer *lx, char **out, const char **raw_start, size_t *raw_len);

/* 1-based line and column of byte offset pos. */
void hlo_lex_line_col(const hlo_lexer *lx, size_t pos, int *line, int *col);
/* "FILE:LINE:COL: " + message, as an INVALID_ARGUMENT status. */
kiln_status hlo_lex_error_at(const hlo_lexer *lx, size_t pos, const char *fmt, ...) KILN_PRINTF(3, 4);
/* "FILE:LINE:COL: expected WHAT, got 'TOKEN'" at the next significant character. */
kiln_status hlo_lex_expected(hlo_lexer *lx, const char *what);
/* Writes a short printable rendering of the token at pos into buf ("end of input" at the
 * end). */
void hlo_lex_describe_token(const hlo_lexer *lx, size_t pos, char *buf, size_t cap);

#endif
