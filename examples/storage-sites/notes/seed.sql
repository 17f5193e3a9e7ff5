CREATE TABLE notes (
  id serial PRIMARY KEY,
  slug text NOT NULL UNIQUE,
  title text NOT NULL,
  body text NOT NULL DEFAULT ''
);
INSERT INTO notes (slug, title, body) VALUES ('welcome', 'Welcome', 'Notes are kept in PostgreSQL.');
