"""Changes to people: roles, visibility-group membership and tokens made for another account.

Each service takes an ``accounts.actors.Actor``, refuses with ``accounts.errors`` (never an HTTP
error), and writes one audit row per change. The People page and the ``manage.py`` commands
(``role``, ``visibility_group``, ``createtoken``, ``revoketoken``) call these same functions.
"""
