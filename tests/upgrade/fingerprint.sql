-- Every row of every table of the extension, one line per table: its name, its row count and an
-- md5 of its rows in a fixed order. The same before and after the upgrade, or a row was changed.
\set ON_ERROR_STOP on
\pset tuples_only on
\pset format unaligned
SELECT c.relname, t.n, t.digest
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'pgjobs'
CROSS JOIN LATERAL (
    SELECT (xpath('/row/n/text()', x))[1]::text::bigint AS n, (xpath('/row/d/text()', x))[1]::text AS digest
    FROM query_to_xml(format('SELECT count(*) AS n, md5(coalesce(string_agg(r::text, '','' ORDER BY r::text), '''')) AS d FROM ONLY pgjobs.%I r',
                             c.relname), false, false, '') x
) t
WHERE c.relkind = 'r'
ORDER BY c.relname;
