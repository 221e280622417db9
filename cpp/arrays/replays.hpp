// dnnl.ops programs: a sequence of ops calls captured once (Python's
// ops/_capture.py records the launches a function's calls made and decides
// which array each of their arguments is: an input, an array captured by
// reference, or a result made inside) and replayed here in one call. On
// each queue a program replays on it keeps a set: the results made inside
// (static: every replay on that queue writes the same arrays, returned as
// the outputs, as CUDA Graphs' static outputs), every step's arguments
// made once, only the inputs' memories found per replay. A replay checks
// the inputs against the capture's (Python names a mismatch), waits for the
// inputs' and the captured arrays' pending events, executes every step in
// order (on an out-of-order queue each after the previous one), and gives
// the outputs, and the inputs and captured arrays a step wrote, the last
// step's event.
//
// Shared state: a program's sets, by queue handle, under its mutex (held
// for no Python call; a set is built outside it and the first one inserted
// is kept); each set's replays one at a time under the set's own lock,
// waited for with the GIL released, from reading the events a replay waits
// for to giving its event (its last event on an out-of-order queue, whether
// it has replayed yet); a set's arguments are read-only once built (a
// replay copies the launches that take an input).
#pragma once

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {
namespace replays {

void bind(pybind11::module_ &m);

} // namespace replays
} // namespace dnnl_ocl_interop
