"""Constructors: __init__ (own and inherited), __new__, classes without either."""


class Base:
    def __init__(self, value):
        self.value = value


class Derived(Base):
    pass


class Singleton:
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __init__(self):
        self.ready = True


class Plain:
    def method(self):
        return 1


class Error(Exception):
    pass


def build():
    Base(1)
    Derived(2)
    Singleton()
    Plain().method()
    return Error("x")


build()
