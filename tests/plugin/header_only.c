/* Compiles include/kiln/plugin.h alone, as C89 with -pedantic and as C++98, to keep the
 * plugin ABI header free of anything a vendor's older toolchain would reject. */
#include "kiln/plugin.h"

static const kiln_plugin_api header_only_table = {sizeof(kiln_plugin_api), KILN_PLUGIN_API_MAJOR,
                                                  KILN_PLUGIN_API_MINOR, "header-only", "0",
                                                  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

int main(void) { return header_only_table.struct_size == sizeof(kiln_plugin_api) ? 0 : 1; }
