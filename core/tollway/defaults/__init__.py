"""The core's default mechanisms, each a plugin registered like any other, ``trylast``.

A deployment replaces one by registering a plugin that implements the same hook.
"""
