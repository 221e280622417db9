"""The primitives the cache-blob tests build in their own process and in
fresh ones (test_persistent_cache.py, test_caches_profiling.py), as Python
source: every process execs this one text, so their descriptors, and so
their cache blob ids, are equal by construction.

Imports nothing at the top that chooses an OpenCL device (no pyopencl, no
helpers): processes spawned by test_persistent_cache import it first.
"""
import textwrap

SHARED_PRIMITIVES = textwrap.dedent("""
    import numpy as np

    def gpu_device(cl):
        '''The first Intel GPU (the emulated one when there is no real one).'''
        return [d for p in cl.get_platforms() if "Intel" in p.vendor
                for d in p.get_devices() if d.type & cl.device_type.GPU][0]

    def descriptors(dnnl, engine):
        '''{name: (primitive_desc, {ARG_*: memory.desc})}.'''
        DT, TAG = dnnl.memory.data_type, dnnl.memory.format_tag
        desc = lambda dims, tag: dnnl.memory.desc(dims, DT.f32, tag)
        ops = dnnl.post_ops()
        ops.append_eltwise(dnnl.algorithm.eltwise_relu, 0.0, 0.0)
        attr = dnnl.primitive_attr()
        attr.set_post_ops(ops)
        src, wei, bias, dst = (desc([6, 20], TAG.ab), desc([20, 9], TAG.ab),
                               desc([1, 9], TAG.ab), desc([6, 9], TAG.ab))
        c_src, c_wei, c_dst = (desc([2, 3, 9, 9], TAG.nchw), desc([4, 3, 3, 3], TAG.oihw),
                               desc([2, 4, 9, 9], TAG.nchw))
        s_src = desc([4, 160], TAG.ab)  # not 17..128: docs/known-problems.md, softmax
        inference = dnnl.prop_kind.forward_inference
        return {
            "matmul": (dnnl.matmul.primitive_desc(engine, src, wei, bias, dst, attr),
                       {dnnl.ARG_SRC: src, dnnl.ARG_WEIGHTS: wei, dnnl.ARG_BIAS: bias,
                        dnnl.ARG_DST: dst}),
            "convolution_forward": (dnnl.convolution_forward.primitive_desc(
                engine, inference, dnnl.algorithm.convolution_direct, c_src, c_wei, c_dst,
                [1, 1], [1, 1], [1, 1]),
                {dnnl.ARG_SRC: c_src, dnnl.ARG_WEIGHTS: c_wei, dnnl.ARG_DST: c_dst}),
            "softmax_forward": (dnnl.softmax_forward.primitive_desc(
                engine, inference, dnnl.algorithm.softmax_accurate, s_src, s_src, 1),
                {dnnl.ARG_SRC: s_src, dnnl.ARG_DST: s_src}),
        }

    def inputs(dnnl, arg_descs, seed):
        '''{ARG_*: array} for every argument but the destination.'''
        return {arg: np.random.default_rng(seed + arg).uniform(-1, 1, d.get_dims())
                .astype(np.float32) for arg, d in arg_descs.items() if arg != dnnl.ARG_DST}

    def run(dnnl, primitive, stream, engine, arg_descs, values):
        '''Executes `primitive` on `values`; the destination as an array.'''
        mems = {arg: dnnl.memory(d, engine) for arg, d in arg_descs.items()}
        for arg, array in values.items():
            dnnl.arrays.write(mems[arg], array)
        primitive.execute(stream, mems)
        stream.wait()
        return dnnl.arrays.read(mems[dnnl.ARG_DST])
""")


def load():
    """The text's functions: {name: function}."""
    names: dict = {}
    exec(SHARED_PRIMITIVES, names)
    return names
