"""The migrations are the schema: applying them yields exactly what the models describe."""

from flask_migrate import check


def test_models_and_migrations_agree(app):
    with app.app_context():
        check()
