/* Whether recording a replay into an OpenCL command buffer
 * (cl_khr_command_buffer) would beat enqueueing its kernels one by one, as
 * dnnl.ops' replay does (through oneDNN's execute): the 20-op network of
 * benchmarks/run.py (ten times y = tanh(y + bias) on a [16, 64] f32 tensor,
 * each step a kernel into a buffer of its own, the add and the tanh as two
 * kernels like oneDNN's binary and eltwise), timed two ways on the device's
 * own runtime, in turns:
 *
 *   enqueued: 20 clEnqueueNDRangeKernel, then clFinish (what a replay does);
 *   recorded: the same 20 kernels recorded once into a command buffer, then
 *             clEnqueueCommandBufferKHR and clFinish per run.
 *
 * The output of both is checked against the host's. Prints the median µs
 * per run of each way in each of ROUNDS rounds, and the medians over rounds.
 *
 *   cc -O2 -o build/command_buffer benchmarks/command_buffer.c -lOpenCL
 *   OCL_ICD_VENDORS=$(python3 -c "from dnnl_ocl_interop import emulation; \
 *       print(emulation.cpu_runtime_path())") build/command_buffer [ROUNDS]
 *
 * (Intel's CPU runtime directly, the device the emulated GPU runs on; the
 * emulation layer passes no command-buffer entry points.) docs/ops.md,
 * "Capture and replay", has the measured result. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROWS 16
#define COLS 64
#define STEPS 20
#define SAMPLES 201

static void check(cl_int err, const char *what) {
    if (err != CL_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, err);
        exit(1);
    }
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof(double), by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *source =
        "kernel void add_row(global const float *x, global const float *bias, global float *y) {\n"
        "    size_t i = get_global_id(0); y[i] = x[i] + bias[i % 64];\n"
        "}\n"
        "kernel void tanh_of(global const float *x, global float *y) {\n"
        "    size_t i = get_global_id(0); y[i] = tanh(x[i]);\n"
        "}\n";

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    check(clGetPlatformIDs(1, &platform, NULL), "clGetPlatformIDs");
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL), "clGetDeviceIDs");
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    check(err, "clCreateContext");
    cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, NULL, &err);
    check(err, "clCreateCommandQueueWithProperties");

    clCreateCommandBufferKHR_fn create_buffer = (clCreateCommandBufferKHR_fn)
            clGetExtensionFunctionAddressForPlatform(platform, "clCreateCommandBufferKHR");
    clCommandNDRangeKernelKHR_fn record_kernel = (clCommandNDRangeKernelKHR_fn)
            clGetExtensionFunctionAddressForPlatform(platform, "clCommandNDRangeKernelKHR");
    clFinalizeCommandBufferKHR_fn finalize = (clFinalizeCommandBufferKHR_fn)
            clGetExtensionFunctionAddressForPlatform(platform, "clFinalizeCommandBufferKHR");
    clEnqueueCommandBufferKHR_fn enqueue_buffer = (clEnqueueCommandBufferKHR_fn)
            clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueCommandBufferKHR");
    clReleaseCommandBufferKHR_fn release_buffer = (clReleaseCommandBufferKHR_fn)
            clGetExtensionFunctionAddressForPlatform(platform, "clReleaseCommandBufferKHR");
    if (!create_buffer || !record_kernel || !finalize || !enqueue_buffer || !release_buffer) {
        printf("the platform offers no cl_khr_command_buffer entry points\n");
        return 2;
    }

    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    check(err, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &device, "", NULL, NULL), "clBuildProgram");
    const size_t n = ROWS * COLS, bytes = n * sizeof(float);
    float host_x[ROWS * COLS], host_bias[COLS], expected[ROWS * COLS], got[ROWS * COLS];
    for (size_t i = 0; i < n; ++i) host_x[i] = (float)(i % 7) * 0.1f - 0.3f; /* run.py's pattern() */
    for (size_t i = 0; i < COLS; ++i) host_bias[i] = (float)(i % 7) * 0.1f - 0.3f;
    for (size_t i = 0; i < n; ++i) {
        double y = host_x[i];
        for (int s = 0; s < STEPS / 2; ++s) y = tanh(y + host_bias[i % COLS]);
        expected[i] = (float)y;
    }
    cl_mem x = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, bytes, host_x, &err);
    check(err, "clCreateBuffer");
    cl_mem bias = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, sizeof(host_bias), host_bias, &err);
    check(err, "clCreateBuffer");
    cl_mem dst[STEPS];
    cl_kernel kernels[STEPS];
    for (int s = 0; s < STEPS; ++s) {
        dst[s] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        check(err, "clCreateBuffer");
        cl_mem src = s == 0 ? x : dst[s - 1];
        kernels[s] = clCreateKernel(program, s % 2 == 0 ? "add_row" : "tanh_of", &err);
        check(err, "clCreateKernel");
        check(clSetKernelArg(kernels[s], 0, sizeof(cl_mem), &src), "clSetKernelArg");
        if (s % 2 == 0) {
            check(clSetKernelArg(kernels[s], 1, sizeof(cl_mem), &bias), "clSetKernelArg");
            check(clSetKernelArg(kernels[s], 2, sizeof(cl_mem), &dst[s]), "clSetKernelArg");
        } else {
            check(clSetKernelArg(kernels[s], 1, sizeof(cl_mem), &dst[s]), "clSetKernelArg");
        }
    }
    cl_command_buffer_khr buffer = create_buffer(1, &queue, NULL, &err);
    check(err, "clCreateCommandBufferKHR");
    cl_sync_point_khr previous = 0;
    for (int s = 0; s < STEPS; ++s) { /* each after the one before (an in-order replay) */
        cl_sync_point_khr point;
        check(record_kernel(buffer, NULL, NULL, kernels[s], 1, NULL, &n, NULL, s ? 1 : 0,
                      s ? &previous : NULL, &point, NULL),
                "clCommandNDRangeKernelKHR");
        previous = point;
    }
    check(finalize(buffer), "clFinalizeCommandBufferKHR");

    double enqueued_rounds[64], recorded_rounds[64];
    if (rounds > 64) rounds = 64;
    for (int r = 0; r < rounds; ++r) {
        for (int way = 0; way < 2; ++way) {
            int recorded = (way + r) % 2; /* which goes first alternates by round */
            double samples[SAMPLES];
            for (int i = -20; i < SAMPLES; ++i) { /* 20 warm-up runs */
                float poison = -7777.0f;
                check(clEnqueueFillBuffer(queue, dst[STEPS - 1], &poison, sizeof(poison), 0, bytes, 0,
                              NULL, NULL),
                        "clEnqueueFillBuffer");
                check(clFinish(queue), "clFinish");
                double start = now_us();
                if (recorded) {
                    check(enqueue_buffer(0, NULL, buffer, 0, NULL, NULL), "clEnqueueCommandBufferKHR");
                } else {
                    for (int s = 0; s < STEPS; ++s)
                        check(clEnqueueNDRangeKernel(queue, kernels[s], 1, NULL, &n, NULL, 0, NULL, NULL),
                                "clEnqueueNDRangeKernel");
                }
                check(clFinish(queue), "clFinish");
                if (i >= 0) samples[i] = now_us() - start;
            }
            check(clEnqueueReadBuffer(queue, dst[STEPS - 1], CL_TRUE, 0, bytes, got, 0, NULL, NULL),
                    "clEnqueueReadBuffer");
            for (size_t i = 0; i < n; ++i)
                if (fabsf(got[i] - expected[i]) > 1e-5f) {
                    fprintf(stderr, "%s: output %zu is %g, the host's %g\n",
                            recorded ? "recorded" : "enqueued", i, got[i], expected[i]);
                    return 1;
                }
            (recorded ? recorded_rounds : enqueued_rounds)[r] = median(samples, SAMPLES);
        }
        printf("round %d: enqueued %.2f µs, recorded %.2f µs\n", r + 1, enqueued_rounds[r],
                recorded_rounds[r]);
    }
    printf("median over %d rounds: enqueued %.2f µs, recorded %.2f µs per run of %d kernels "
           "(outputs checked)\n",
            rounds, median(enqueued_rounds, rounds), median(recorded_rounds, rounds), STEPS);
    release_buffer(buffer);
    return 0;
}
