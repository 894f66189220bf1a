"""placeholder"""
class ModelCache:
    @classmethod
    def open_for(cls, config, path, proto):
        return None
