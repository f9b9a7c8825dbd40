"""Checks the model tests share when they run with a plugin loaded (--plugin MANIFEST).

check_transfers reads `kiln run --iters 3 --json`: a device with memory of its own moves
the same per-run values (inputs, results, values crossing between devices) on every run,
and its weights once -- uploaded at compile and kept there. So all bytes moved to the
device minus three times a warm run's is what stayed resident, and it must be positive:
weights re-sent on every run would leave nothing.
"""


def check_transfers(stats):
    """None when the plugin's device was used and its weights crossed once; else why not."""
    total, last = stats.get('bytes_to_device', 0), stats.get('last_run_bytes_to_device', -1)
    if total <= 0:
        return "nothing moved to the plugin's device (--json bytes_to_device 0): the plugin was not used"
    if last < 0 or total - 3 * last <= 0:
        return 'no weights stayed on the device: %d bytes moved in all, %d by the last run' % (total, last)
    return None
