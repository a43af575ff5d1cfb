// libFuzzer's entry point for programs that keep their own main (compiler-rt FuzzerInterface.h).
// SwiftPM links every executable with main aliased to the module's own entry point, so the targets
// cannot use libFuzzer's main: their top-level code calls this instead.
#ifndef CLIBFUZZER_H
#define CLIBFUZZER_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
