-- The tracker's base state: every instance starts from this.
CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT NOT NULL, label TEXT NOT NULL DEFAULT '',
                     body TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT 'open');
CREATE TABLE comments (id INTEGER PRIMARY KEY, issue INTEGER NOT NULL REFERENCES issues(id),
                       author TEXT NOT NULL, text TEXT NOT NULL);
INSERT INTO issues (title, label, body, status) VALUES
  ('Login page crashes on empty password', 'bug', 'Submitting the form with no password shows a stack trace.', 'open'),
  ('Search is slow', 'performance', 'Searching 10k issues takes 4 seconds.', 'open'),
  ('Export to CSV', 'feature', 'Let me download the issue list as CSV.', 'open'),
  ('Typo on the home page', 'bug', 'It says "Isssues".', 'closed'),
  ('Crash when title is empty', 'bug', 'Creating an issue without a title crashes.', 'open'),
  ('Dates shown in UTC', 'bug', 'Dates should be shown in the local time zone.', 'open');
INSERT INTO comments (issue, author, text) VALUES
  (1, 'maria', 'I can reproduce this on Firefox.'),
  (2, 'li', 'The query has no index on title.');
