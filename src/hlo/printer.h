/* HLO text printer: writes modules in XLA's HLO text format, which XLA's parser reads
 * and kiln's parser reads back to an identical print (print(parse(print(m))) ==
 * print(m)). */
#ifndef KILN_HLO_PRINTER_H
#define KILN_HLO_PRINTER_H

#include <stdbool.h>

#include "base/strbuf.h"
#include "hlo/ir.h"

typedef struct hlo_print_options {
  bool print_percent;        /* "%name" (default true) */
  bool print_operand_shapes; /* "add(f32[2]{0} %a, …)" (default true) */
  bool print_layouts;        /* "{1,0}" after shapes (default true) */
  bool print_metadata;       /* metadata={…} (default true) */
  bool print_large_constants;/* false: constants over 10 elements print as {...} (default true) */
} hlo_print_options;

hlo_print_options hlo_print_options_default(void);
/* opts may be NULL for defaults. Returns a malloc'ed string. */
char *hlo_module_to_string(const hlo_module *m, const hlo_print_options *opts);
/* The text of a debugging dump (--dump_to): a real model's weights printed in every dump
 * would be gigabytes, so, as XLA does, constants over 10 elements are {...} unless
 * large_constants (--dump_large_constants). */
char *hlo_module_to_dump_string(const hlo_module *m, bool large_constants);
void hlo_print_computation(strbuf *b, const hlo_computation *c, const hlo_print_options *opts);
void hlo_print_instr(strbuf *b, const hlo_instr *ins, const hlo_print_options *opts);

#endif
