"""Model builders: one function per model kind, each `build(params, data) -> keras.Model`."""
