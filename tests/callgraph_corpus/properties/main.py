"""Properties: reads call the getter, assignments the setter, del the deleter."""


class Temperature:
    def __init__(self, celsius):
        self._celsius = celsius

    @property
    def celsius(self):
        return self._celsius

    @celsius.setter
    def celsius(self, value):
        self._celsius = self.check(value)

    @celsius.deleter
    def celsius(self):
        self._celsius = None

    @property
    def fahrenheit(self):
        return self.celsius * 9 / 5 + 32

    def check(self, value):
        return value


def main():
    t = Temperature(20)
    print(t.fahrenheit)
    t.celsius = 25
    t.celsius += 1
    del t.celsius


main()
