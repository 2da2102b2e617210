"""A base-class method calling methods that subclasses override (template method)."""


class Task:
    def run(self):
        self.setup()
        return self.execute()

    def setup(self):
        pass

    def execute(self):
        raise NotImplementedError


class Download(Task):
    def execute(self):
        return self.fetch()

    def fetch(self):
        return "data"


class Upload(Task):
    def setup(self):
        self.handler = self.send

    def execute(self):
        return self.handler()

    def send(self):
        return "sent"


Download().run()
Upload().run()
