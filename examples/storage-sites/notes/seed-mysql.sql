CREATE TABLE notes (
  id int AUTO_INCREMENT PRIMARY KEY,
  slug varchar(200) NOT NULL UNIQUE,
  title text NOT NULL,
  body text NOT NULL
);
INSERT INTO notes (slug, title, body) VALUES ('welcome', 'Welcome', 'Notes are kept in MariaDB.');
