"""Backend-neutral Keras layers that seqkeras adds on top of Keras: attention
(Bahdanau, Luong), the linear-chain CRF, initializers.

Written with `keras.ops` only and registered serializable (each round-trips
`get_config`). They import Keras, each other and the backends stage only, so
that they can be used outside the suite.

May import: backends.
"""
