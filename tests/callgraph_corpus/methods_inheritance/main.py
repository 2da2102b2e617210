"""Methods via instances and classes, inherited through the MRO, super() calls."""


class Animal:
    def __init__(self, name):
        self.name = name

    def describe(self):
        return self.sound()

    def sound(self):
        return "..."

    def rename(self, name):
        self.name = name


class Dog(Animal):
    def sound(self):
        return "woof"

    def describe(self):
        base = super().describe()
        return base + self.suffix()

    def suffix(self):
        return "!"


class Puppy(Dog):
    def __init__(self, name):
        super().__init__(name)


def main():
    dog = Dog("rex")
    dog.describe()
    dog.rename("max")
    puppy = Puppy("bit")
    puppy.describe()
    Animal.describe(dog)
    Animal("x").sound()


main()
