"""marshmallow schemas of the API, named for their use (…CreateSchema, …Schema, …QuerySchema)."""
