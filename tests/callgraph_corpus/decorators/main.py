"""Decorators: plain, with arguments, functools.wraps, returning the function itself, stacked."""
import functools


def trace(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        log(func.__name__)
        return func(*args, **kwargs)
    return wrapper


def repeat(times):
    def decorate(func):
        def repeated(*args):
            for _ in range(times):
                func(*args)
        return repeated
    return decorate


def register(func):
    REGISTRY.append(func)
    return func


def log(message):
    print(message)


REGISTRY = []


@trace
def add(a, b):
    return a + b


@repeat(3)
def hello():
    log("hello")


@register
def plugin():
    return 1


@trace
@register
def stacked():
    return 2


add(1, 2)
hello()
plugin()
stacked()
