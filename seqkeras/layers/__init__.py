"""Backend-neutral Keras layers that seqkeras adds on top of Keras: attention
(Bahdanau, Luong), the linear-chain CRF, initializers.

Written with `keras.ops` only and registered serializable (each round-trips
`get_config`). They may import Keras and each other; nothing else of seqkeras,
so that they can be used outside the suite.
"""
