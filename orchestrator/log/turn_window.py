"""Postgres: `debate_turn_window`, the newest matches of a search among the turns (migrations m016 and m017;
the SQL of an applied migration never changes: a new version is a new migration).

Search ranks only a query's newest `wanted` matches per table (search.py `SEARCH_RECENT_MATCHES`). For a word of
middling frequency a plain statement reads many rows either way (the turns newest first, or every GIN match). The
function reads an id range estimated to hold the newest `wanted` matches (from the planner's statistics for one
word, else from the newest 512 turns), the GIN matches `BitmapAnd` the key's range, and carries on below with the
density it saw when the range fell short; words too rare or too common for a range take the plain statement. Rows
are (id, debate, score), not necessarily `wanted` nor in order: the caller keeps the newest. `stable`: every step
reads the calling statement's snapshot. A scoped search (`/debate search` in a channel) passes the scope's condition
as `reads.scope_sql` writes it (`scope_condition`) and its values, so each step keeps only what the scope may see.
"""

FUNCTION = "debate_turn_window"

# The scope's values inside the function's statements, in this order after the query ($1).
SCOPE_PARAMETERS = ("scope_platform", "scope_channel", "scope_workspace")


def _function_sql(head: str, ranked: str, range_step: str, using: str) -> str:
    return f"""
{head}
returns table (turn_id bigint, turn_debate text, turn_score real)
language plpgsql stable
set enable_indexscan = on
as $$
declare
    ranked constant text := {ranked};
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
                    using {using};
                return;
            end if;
            perform set_config('enable_indexscan', 'off', true);
        end if;
        return query execute {range_step} using {using};
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


TURN_WINDOW_SQL = _function_sql(  # m016
    f"create function {FUNCTION}(query tsquery, wanted bigint)",
    """'select t.id, t.debate_id, -ts_rank(t.text_tsv, $1) from turns t'
                            ' where t.text_tsv @@ $1 and '""",
    "ranked || format('t.id >= %s and t.id < %s', hi - span, hi)",
    "query")

# m017: the same, with the scope's condition (`visible`, on the turn's debate `d`) and its values (`scope`).
# Its defaults keep the unscoped call as it was; the old signature goes, or that call would match both. A
# range's matches are checked against the scope by looking up only their own debates (`= any`), where a
# join hashed every debate the scope may see.
SCOPED_TURN_WINDOW_SQL = f"drop function {FUNCTION}(tsquery, bigint);\n" + _function_sql(
    f"create function {FUNCTION}(query tsquery, wanted bigint, visible text default 'true',"
    " scope text[] default '{}')",
    """'select t.id, t.debate_id, -ts_rank(t.text_tsv, $1) from turns t'
                            || case when visible = 'true' then '' else ' join debates d on d.id = t.debate_id' end
                            || ' where t.text_tsv @@ $1 and (' || visible || ') and '""",
    """case when visible = 'true' then ranked || format('t.id >= %s and t.id < %s', hi - span, hi)
            else 'with m as materialized (select t.id, t.debate_id, -ts_rank(t.text_tsv, $1) from turns t'
                 || format(' where t.text_tsv @@ $1 and t.id >= %s and t.id < %s', hi - span, hi)
                 || ') select m.* from m where m.debate_id in (select d.id from debates d'
                 || ' where d.id = any(array(select distinct m.debate_id from m)) and (' || visible || '))' end""",
    "query, scope[1], scope[2], scope[3]")


def scope_condition(visible: str) -> str:
    """`reads.scope_sql`'s condition with its named values as the function's positional ones (`$2`…)."""
    for n, name in enumerate(SCOPE_PARAMETERS, start=2):
        visible = visible.replace(f":{name}", f"${n}")
    return visible
