"""The fake GitHub by area (``tests/fakes/github_server.py`` says what it is and exports the
names tests use): ``state`` holds what the three servers share, and each area adds its routes
as a mixin of ``server.FakeGitHub``.

* ``records``: the seeded objects and the recorded requests;
* ``wire``: response helpers (JSON, REST errors, Azure XML errors, Twirp errors);
* ``state``: the shared state, the servers' lifecycle, signing, pagination;
* ``seeding``: ``add_*``, faults (``fail_next`` and the rate limits) and inspection;
* ``repos``: ``/user``, the repository, commits and ``compare``;
* ``pulls``: pull requests;
* ``issues``: issue comments;
* ``actions``: workflow runs and artifacts (REST);
* ``blob``: the Azure-Blob-like store;
* ``results``: the results service's Twirp artifacts API (the cache service is
  ``tests/fakes/actions_cache.py``);
* ``server``: ``FakeGitHub``, the router and the HTTP handler.
"""
