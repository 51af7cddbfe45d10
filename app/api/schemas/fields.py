"""Field types shared by the API schemas."""

import marshmallow as ma


class StrictBoolean(ma.fields.Boolean):
    """JSON `true` or `false` only: "yes", 1 or "true" are refused, not guessed at."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value
