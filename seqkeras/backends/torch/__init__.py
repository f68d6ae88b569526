"""The torch backend's fast CPU path: fused recurrent kernels, the lean training
loop, fused Adam, the layer chain, the softmax loss and accuracy, the allocator
setting.

Every module here that imports torch does so at its top, so importing one
means torch is wanted: the rest of the package reaches them only through the
backend-neutral modules of `seqkeras.backends`, which import them on torch.
Each fast path keeps Keras's generic path beside it and falls back to it,
saying why, whenever it does not apply; tests compare the two. Like all of
backends, it may import errors and other backends modules only.
"""
