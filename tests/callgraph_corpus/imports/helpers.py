def greet(name):
    return format_name(name)


def format_name(name):
    return name.title()
