"""The torch backend's fast CPU path: fused recurrent kernels, the lean training
loop, fused Adam, the layer chain, the softmax loss's backward pass, the
allocator setting.

Every module here that imports torch does so at its top, so importing one
means torch is wanted. Each fast path keeps Keras's generic path beside it and
falls back to it, saying why, whenever it does not apply; tests compare the two.
It may import errors, backends.runtime and the training losses it accelerates;
nothing above the training stage.
"""
