/*
 * engine_narrow.c: the engine of engine.c again, with room for the first 8
 * streams in a rank's state instead of all of them: 400 -> 256 bytes
 * per simulated rank, for the workloads whose programs use no other stream
 * (sc__engine_run picks it). The same code, so the same results bit for bit.
 */
#define SC_ENGINE_NS SC_ENGINE_NARROW_NS
#define SC_ENGINE_WIDE 0
#define SC_ENGINE_ENTRY sc__engine_run_narrow
#include "engine.c"
