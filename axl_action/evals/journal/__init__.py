"""The run journal: every settled item on disk as it settles, so a crash never loses paid work.

One module a job (import each name from its module; this package re-exports nothing):

* ``base``: where a journal lives (``journal_path``), its errors, the checksum on its lines,
  what a resume keeps (``is_final``) and the flags a segment records (``flags_of``);
* ``writer``: ``JournalWriter`` and the durability rule the docs promise;
* ``reader``: ``read_journal``, the journal as read back and validated;
* ``checks``: the resume checks that refuse a journal written under other settings;
* ``earlier``: an earlier results file as a resume source;
* ``recovery``: ``recover_results``, the results a journal alone holds (``axl-eval recover``);
* ``lock``: one writer per journal;
* ``session``: ``JournalSession``, the journal of one ``run`` / ``rescore`` command.

The file format's models are in ``schema/journal.py``.
"""
