"""Postgres: `debate_turn_window`, the newest matches of a search among the turns (migration m016; the
SQL of an applied migration never changes: a new version is a new migration's `create or replace`).

Search ranks only a query's newest `wanted` matches per table (search.py `SEARCH_RECENT_MATCHES`). On
the turns, a plain statement finds them one of two ways: walking the turns newest first and testing
each one (a word in 3 % of turns visits ~33,000 to find 1,000), or reading every match from the GIN
index and sorting. For a word of middling frequency neither reads few rows. An id range that holds
just the newest `wanted` matches does: the GIN index's matches `BitmapAnd` the range of the primary
key, and only those rows are read. The function finds that range as it goes: it estimates how many
ids hold `wanted` matches from the lexeme's frequency in the planner's statistics (a query of one
word), or from the matches among the newest 512 turns (any other query), reads the matches in that
range, and, when the estimate fell short, carries on below it with the density it has seen. Words too
rare or too common for a range to pay (a range of more than half the remaining turns, or a word in
1 turn of 5 or more) take the plain statement: every match from the GIN index where there are fewer
matches than a walk to the window's end would visit, the walk otherwise.

The rows are the matches' (id, debate, score), not necessarily only `wanted` of them nor in order: the
caller keeps the newest `wanted`. Each step is planned with its range as constants (EXECUTE), with
plain index scans off where the bitmaps read fewer rows (the planner counts a walk's test of each row
as nearly free, so it walks there); the function's `set` clause restores the caller's setting on return.
`stable`: every step reads the snapshot of the calling statement, so the window is the one statement's.
"""

FUNCTION = "debate_turn_window"

TURN_WINDOW_SQL = f"""
create function {FUNCTION}(query tsquery, wanted bigint)
returns table (turn_id bigint, turn_debate text, turn_score real)
language plpgsql stable
set enable_indexscan = on
as $$
declare
    ranked constant text := 'select t.id, t.debate_id, -ts_rank(t.text_tsv, $1) from turns t'
                            ' where t.text_tsv @@ $1 and ';
    oldest bigint := (select min(t.id) from turns t);
    hi bigint := (select max(t.id) from turns t) + 1;
    density float8;  -- matches per id below `hi`, as far as known
    margin float8 := 1.1;
    span bigint;
    covered bigint := 0;
    found bigint := 0;
    got bigint;
begin
    if hi is null then
        return;
    end if;
    if numnode(query) = 1 then  -- one lexeme: its share of turns, 0 if too rare to be among the statistics'
        select coalesce(s.most_common_elem_freqs[array_position(s.most_common_elems::text::text[],
                        replace(substr(query::text, 2, length(query::text) - 2), '''''', ''''))], 0)
        into density
        from pg_stats s join pg_class c on c.relname = s.tablename
        join pg_namespace n on n.oid = c.relnamespace and n.nspname = s.schemaname
        where c.oid = 'turns'::regclass and s.attname = 'text_tsv';
    end if;
    loop
        if density is null then
            span := 512;
        else
            span := case when density > 0 then ceil((wanted - found) * margin / density)::bigint + 64 end;
            if span is null or density >= 0.2 or hi - span <= oldest + (hi - oldest) / 2 then
                -- every match from the GIN index where there are fewer than a walk to the window's end visits
                perform set_config('enable_indexscan', case when density * density * (hi - oldest) < wanted - found
                                                            then 'off' else 'on' end, true);
                return query execute ranked || format('t.id < %s order by t.id desc limit %s', hi, wanted - found)
                    using query;
                return;
            end if;
            perform set_config('enable_indexscan', 'off', true);
        end if;
        return query execute ranked || format('t.id >= %s and t.id < %s', hi - span, hi) using query;
        get diagnostics got = row_count;
        found := found + got;
        covered := covered + span;
        hi := hi - span;
        exit when found >= wanted or hi <= oldest;
        density := found::float8 / covered;
        margin := 1.05 + 1 / sqrt(greatest(found, 1));  -- the fewer seen, the less sure the density
        perform set_config('enable_indexscan', 'on', true);
    end loop;
end $$;
"""
