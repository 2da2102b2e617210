"""Calls whose callee depends on run-time data: they stay in CallGraph.unresolved."""
import sys


class Plugin:
    def run(self):
        return "ran"

    def stop(self):
        return "stopped"


def call_by_name(obj, name):
    return getattr(obj, name)()


def main(argv):
    plugin = Plugin()
    call_by_name(plugin, argv[1])
    method = getattr(plugin, "run")
    method()
    return eval(argv[2])()


main(sys.argv)
