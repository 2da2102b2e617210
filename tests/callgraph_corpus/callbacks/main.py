"""Functions passed as values: callbacks in variables, containers, attributes, map/sorted."""


def on_start():
    return "start"


def on_stop():
    return "stop"


def apply_all(callbacks, value):
    return [cb(value) for cb in callbacks]


def dispatch(table, key):
    return table[key]()


class Button:
    def __init__(self, on_click):
        self.on_click = on_click

    def click(self):
        return self.on_click()


def double(x):
    return 2 * x


def main():
    handlers = {"start": on_start, "stop": on_stop}
    handlers["start"]()
    action = on_stop
    action()
    dispatch(handlers, "stop")
    Button(on_start).click()
    list(map(double, [1, 2]))
    sorted([3, 1], key=double)
    apply_all([double], 1)


main()
