"""The ``yt`` command line and the ``%yt`` magic share this package: one grammar
(:mod:`yitong_lab.cli.grammar`), one module per noun (``vc``, ``profile``, ``whoami``)."""
