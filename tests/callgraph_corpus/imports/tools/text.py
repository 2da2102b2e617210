from shapes.units import scale


def shout(text):
    scale(1)
    return text.upper()
