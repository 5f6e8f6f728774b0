-- A SQL file as an application or mysqldump writes it.
/*!40101 SET NAMES utf8mb4 */;
USE shop;
SELECT * FROM orders WHERE note = 'a;b' AND id > 0;
SELECT "x;y", `we;ird` FROM orders # comment; with a semicolon
;
select 1 -- trailing; comment
;
INSERT INTO orders (note) VALUES ('it''s; fine'), ('back\\slash\'; still string');
DELIMITER //
CREATE FUNCTION bump() RETURNS INT MODIFIES SQL DATA
BEGIN
  UPDATE counters SET n = n + 1;
  RETURN 1;
END//
DELIMITER ;
use `odd db`
SELECT COUNT(*) FROM t\G
/* block ; comment */ SELECT 2;
SELECT /*!50000 SQL_NO_CACHE */ 3;
select 4