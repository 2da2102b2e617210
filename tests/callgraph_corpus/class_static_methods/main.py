"""Class methods and static methods, through the class, an instance and cls."""


class Config:
    defaults = {"debug": False}

    def __init__(self, values):
        self.values = values

    @classmethod
    def from_defaults(cls):
        return cls(cls.merge({}))

    @classmethod
    def merge(cls, extra):
        return {**cls.defaults, **extra}

    @staticmethod
    def validate(values):
        return Config.check(values)

    @staticmethod
    def check(values):
        return isinstance(values, dict)


class DevConfig(Config):
    @classmethod
    def merge(cls, extra):
        return super().merge({"debug": True})


def main():
    Config.from_defaults()
    DevConfig.from_defaults()
    Config.validate({})
    Config({}).validate({})


main()
