"""``ov-autoplace``: the runtime's commands (``place``, ``profile``, ``cache``, ``strategies``) and the door through which the lab's commands arrive (entry-point group ``ov_autoplace.commands``)."""
