/* Compiles the plugin ABI headers alone (kiln/plugin.h for ABI 2 and the frozen
 * kiln/plugin_v1.h), as C89 with -pedantic and as C++98, to keep them free of anything a
 * vendor's older toolchain would reject. */
#include "kiln/plugin.h"
#include "kiln/plugin_v1.h"

static const kiln_plugin_api header_only_table = {sizeof(kiln_plugin_api), KILN_PLUGIN_API_MAJOR,
                                                  KILN_PLUGIN_API_MINOR, "header-only", "0",
                                                  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

static const kiln_plugin_v1_api header_only_v1_table = {sizeof(kiln_plugin_v1_api), KILN_PLUGIN_V1_API_MAJOR,
                                                        KILN_PLUGIN_V1_API_MINOR, "header-only-v1", "0",
                                                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

int main(void) {
  return header_only_table.struct_size == sizeof(kiln_plugin_api) &&
                 header_only_v1_table.struct_size == sizeof(kiln_plugin_v1_api)
             ? 0
             : 1;
}
