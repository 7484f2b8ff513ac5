"""The lab's ``ov-autoplace`` commands (show, compare, whatif, bench, train), registered with the runtime's CLI through the entry-point group ``ov_autoplace.commands``."""
