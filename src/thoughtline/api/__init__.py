"""The public Python API: :class:`Orchestrator`, conversations and ``run`` /
``stream``; every name is exported by :mod:`thoughtline`."""
