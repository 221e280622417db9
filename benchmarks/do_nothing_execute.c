/* An execute that does nothing, for checking the benchmark's output checks
 * (tests/test_benchmark_checks.py): preloaded (LD_PRELOAD) into both sides of
 * a benchmarks/run.py run, it takes the place of libdnnl's execute entry
 * points, which the package and the C++ baseline both call, and returns
 * success without running anything. Where the real call hands back an event
 * (an out-of-order queue), it hands back a marker of the stream's queue
 * after the dependencies, so that callers waiting on it go on. Every output
 * check of the run must then fail: its destinations keep the POISON written
 * before the timed work.
 *
 *   cc -shared -fPIC -o do_nothing_execute.so do_nothing_execute.c -ldl
 *
 * libdnnl and the OpenCL loader may be loaded with local scope (Python loads
 * the package's module so), so they are found by their sonames among the
 * loaded libraries rather than linked. The types are declared here, as the
 * C API's headers declare them, so that no oneDNN headers are needed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef int dnnl_status_t; /* dnnl_success is 0 */
typedef void *cl_event;
typedef void *cl_command_queue;
typedef unsigned long cl_bitfield;
typedef int cl_int;
typedef unsigned int cl_uint;

#define CL_QUEUE_PROPERTIES 0x1093
#define CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE (1 << 0)

static void *loaded(const char *soname) {
    void *handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (!handle) {
        fprintf(stderr, "do_nothing_execute: %s is not loaded\n", soname);
        abort();
    }
    return handle;
}

static void *symbol(const char *soname, const char *name) {
    void *f = dlsym(loaded(soname), name);
    if (!f) {
        fprintf(stderr, "do_nothing_execute: no %s in %s\n", name, soname);
        abort();
    }
    return f;
}

/* The stream's queue's marker after `deps` when the queue is out of order
 * (oneDNN returns an event there), NULL on an in-order queue (it returns
 * none). */
static dnnl_status_t no_work(void *stream, const cl_event *deps, int ndeps, cl_event *return_event) {
    if (!return_event) return 0;
    *return_event = NULL;
    dnnl_status_t (*get_queue)(void *, cl_command_queue *) = (dnnl_status_t(*)(void *, cl_command_queue *))
            symbol("libdnnl.so.3", "dnnl_ocl_interop_stream_get_command_queue");
    cl_int (*queue_info)(cl_command_queue, cl_uint, size_t, void *, size_t *)
            = (cl_int(*)(cl_command_queue, cl_uint, size_t, void *, size_t *))symbol(
                    "libOpenCL.so.1", "clGetCommandQueueInfo");
    cl_int (*marker)(cl_command_queue, cl_uint, const cl_event *, cl_event *)
            = (cl_int(*)(cl_command_queue, cl_uint, const cl_event *, cl_event *))symbol(
                    "libOpenCL.so.1", "clEnqueueMarkerWithWaitList");
    cl_command_queue queue = NULL;
    cl_bitfield properties = 0;
    if (get_queue(stream, &queue) != 0 || queue_info(queue, CL_QUEUE_PROPERTIES, sizeof(properties),
                                                     &properties, NULL) != 0)
        return 5; /* dnnl_runtime_error */
    if (!(properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)) return 0;
    return marker(queue, (cl_uint)ndeps, ndeps ? deps : NULL, return_event) == 0 ? 0 : 5;
}

dnnl_status_t dnnl_primitive_execute(const void *primitive, void *stream, int nargs, const void *args) {
    (void)primitive, (void)stream, (void)nargs, (void)args;
    return 0;
}

dnnl_status_t dnnl_ocl_interop_primitive_execute(const void *primitive, void *stream, int nargs,
        const void *args, const cl_event *deps, int ndeps, cl_event *return_event) {
    (void)primitive, (void)nargs, (void)args;
    return no_work(stream, deps, ndeps, return_event);
}

dnnl_status_t dnnl_graph_compiled_partition_execute(const void *compiled, void *stream, size_t num_inputs,
        const void *inputs, size_t num_outputs, const void *outputs) {
    (void)compiled, (void)stream, (void)num_inputs, (void)inputs, (void)num_outputs, (void)outputs;
    return 0;
}

dnnl_status_t dnnl_graph_compiled_partition_execute_v2(const void *compiled, void *stream, size_t num_inputs,
        const void *inputs, size_t num_outputs, const void *outputs, const void *scratchpad) {
    (void)compiled, (void)stream, (void)num_inputs, (void)inputs, (void)num_outputs, (void)outputs;
    (void)scratchpad;
    return 0;
}

dnnl_status_t dnnl_graph_ocl_interop_compiled_partition_execute(const void *compiled, void *stream,
        size_t num_inputs, const void *inputs, size_t num_outputs, const void *outputs, const cl_event *deps,
        int ndeps, cl_event *return_event) {
    (void)compiled, (void)num_inputs, (void)inputs, (void)num_outputs, (void)outputs;
    return no_work(stream, deps, ndeps, return_event);
}

dnnl_status_t dnnl_graph_ocl_interop_compiled_partition_execute_v2(const void *compiled, void *stream,
        size_t num_inputs, const void *inputs, size_t num_outputs, const void *outputs, const void *scratchpad,
        const cl_event *deps, int ndeps, cl_event *return_event) {
    (void)compiled, (void)num_inputs, (void)inputs, (void)num_outputs, (void)outputs, (void)scratchpad;
    return no_work(stream, deps, ndeps, return_event);
}
