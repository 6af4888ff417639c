--
-- PostgreSQL database dump
--

\restrict jAr0fD1A4FMHg3RbMxWxXzWahVHyV76e2KBBpfNLyhysjBRnN9qGsOR2Gn8iXmV

-- Dumped from database version 18.6
-- Dumped by pg_dump version 18.6

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET transaction_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: unaccent; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS unaccent WITH SCHEMA public;


--
-- Name: EXTENSION unaccent; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON EXTENSION unaccent IS 'text search dictionary that removes accents';


--
-- Name: debate_symbols(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.debate_symbols(body text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    select array_remove(regexp_split_to_array(regexp_replace(coalesce(body, ''),
        '[[:alnum:][:space:]\u0021-\u002F\u003A-\u0040\u005B-\u0060\u007B-\u007E'
        '\u00A0-\u00BF\u2000-\u206F\u3000-\u303F]+', ' ', 'g'), ' '), '')
$$;


--
-- Name: debate_tsquery(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.debate_tsquery(query text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    select websearch_to_tsquery('debate_text', query)
        && coalesce((select string_agg(quote_literal(s), ' & ')::tsquery from unnest(debate_symbols(query)) s),
                    ''::tsquery)
$$;


--
-- Name: debate_tsvector(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.debate_tsvector(body text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    select to_tsvector('debate_text', coalesce(body, '')) || array_to_tsvector(debate_symbols(body))
$$;


--
-- Name: debate_text; Type: TEXT SEARCH CONFIGURATION; Schema: public; Owner: -
--

CREATE TEXT SEARCH CONFIGURATION public.debate_text (
    PARSER = pg_catalog."default" );

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR asciiword WITH public.unaccent, simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR word WITH public.unaccent, simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR numword WITH public.unaccent, simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR email WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR url WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR host WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR sfloat WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR version WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR hword_numpart WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR hword_part WITH public.unaccent, simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR hword_asciipart WITH public.unaccent, simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR numhword WITH public.unaccent, simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR asciihword WITH public.unaccent, simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR hword WITH public.unaccent, simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR url_path WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR file WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR "float" WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR "int" WITH simple;

ALTER TEXT SEARCH CONFIGURATION public.debate_text
    ADD MAPPING FOR uint WITH simple;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: channel_settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.channel_settings (
    platform text NOT NULL,
    workspace text NOT NULL,
    channel text NOT NULL,
    "json" text NOT NULL,
    updated_by text,
    updated_at timestamp with time zone
);


--
-- Name: continuations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.continuations (
    debate_id text NOT NULL,
    segment integer NOT NULL,
    requested_by text,
    at timestamp with time zone NOT NULL
);


--
-- Name: debate_log_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.debate_log_migrations (
    id integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: debate_log_migrations_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.debate_log_migrations_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: debate_log_migrations_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.debate_log_migrations_id_seq OWNED BY public.debate_log_migrations.id;


--
-- Name: debates; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.debates (
    id text NOT NULL,
    seq bigint NOT NULL,
    topic text NOT NULL,
    format text NOT NULL,
    status text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    platform text,
    workspace text,
    channel text,
    channel_private boolean,
    thread text,
    requested_by text,
    runner text,
    rounds_planned integer,
    rounds_completed integer DEFAULT 0,
    effort text,
    judge text,
    input_tokens integer DEFAULT 0,
    output_tokens integer DEFAULT 0,
    cost_usd double precision,
    error text,
    warnings text DEFAULT '[]'::text,
    spec text,
    topic_tsv tsvector GENERATED ALWAYS AS (public.debate_tsvector(topic)) STORED,
    segment integer DEFAULT 1 NOT NULL,
    rematch_of text,
    held_by text,
    held_since timestamp with time zone
);


--
-- Name: debates_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.debates ALTER COLUMN seq ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.debates_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: interjections; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.interjections (
    id text NOT NULL,
    seq bigint NOT NULL,
    debate_id text NOT NULL,
    author text NOT NULL,
    "user" text,
    platform text,
    kind text NOT NULL,
    text text NOT NULL,
    round integer,
    at timestamp with time zone NOT NULL
);


--
-- Name: interjections_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.interjections ALTER COLUMN seq ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.interjections_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.messages (
    debate_id text NOT NULL,
    key text NOT NULL,
    platform text,
    channel text,
    message_id text NOT NULL,
    final boolean DEFAULT false NOT NULL
);


--
-- Name: notices; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.notices (
    id bigint NOT NULL,
    debate_id text NOT NULL,
    at timestamp with time zone,
    level text,
    text text NOT NULL
);


--
-- Name: notices_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.notices ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.notices_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: request_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.request_keys (
    key text NOT NULL,
    at timestamp with time zone NOT NULL
);


--
-- Name: seats; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.seats (
    debate_id text NOT NULL,
    label text NOT NULL,
    role text NOT NULL,
    provider text,
    model text NOT NULL,
    "position" integer
);


--
-- Name: thread_renderers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.thread_renderers (
    platform text NOT NULL,
    workspace text NOT NULL,
    renderer text NOT NULL,
    until timestamp with time zone NOT NULL
);


--
-- Name: turns; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.turns (
    id bigint NOT NULL,
    debate_id text NOT NULL,
    round integer NOT NULL,
    seat text NOT NULL,
    role text,
    kind text,
    model text,
    text text,
    started_at timestamp with time zone,
    duration_ms integer,
    input_tokens integer,
    output_tokens integer,
    cost_usd double precision,
    status text NOT NULL,
    error text,
    text_tsv tsvector GENERATED ALWAYS AS (public.debate_tsvector(text)) STORED
);
ALTER TABLE ONLY public.turns ALTER COLUMN text_tsv SET STORAGE MAIN;


--
-- Name: turns_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.turns ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.turns_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: verdicts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.verdicts (
    debate_id text NOT NULL,
    winner text,
    split boolean,
    reasoning text,
    recommendation text,
    consensus text,
    "json" text,
    at timestamp with time zone,
    recommendation_tsv tsvector GENERATED ALWAYS AS (public.debate_tsvector(((COALESCE(recommendation, ''::text) || ' '::text) || COALESCE(reasoning, ''::text)))) STORED,
    number integer DEFAULT 1 NOT NULL,
    seq bigint NOT NULL
);


--
-- Name: verdicts_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.verdicts ALTER COLUMN seq ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.verdicts_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: votes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.votes (
    debate_id text NOT NULL,
    "user" text NOT NULL,
    choice text NOT NULL,
    platform text,
    at timestamp with time zone
);


--
-- Name: debate_log_migrations id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.debate_log_migrations ALTER COLUMN id SET DEFAULT nextval('public.debate_log_migrations_id_seq'::regclass);


--
-- Data for Name: channel_settings; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.channel_settings (platform, workspace, channel, "json", updated_by, updated_at) FROM stdin;
slack	T1	C1	{"proposer":null,"challenger":null,"judge":"openai:gpt-5","format":null,"rounds":null,"effort":null,"interjections":true}	U1	2026-12-01 16:02:25.977229+00
\.


--
-- Data for Name: continuations; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.continuations (debate_id, segment, requested_by, at) FROM stdin;
today000	2	U0	2025-11-24 16:08:20+00
\.


--
-- Data for Name: debate_log_migrations; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.debate_log_migrations (id, name, applied_at) FROM stdin;
1	m001_text_search	2026-12-01 16:02:25.010718+00
2	m002_core_tables	2026-12-01 16:02:25.010718+00
3	m003_indexes	2026-12-01 16:02:25.010718+00
4	m004_full_text_search	2026-12-01 16:02:25.010718+00
5	m005_team_in_the_loop	2026-12-01 16:02:25.010718+00
6	m006_thread_renderer	2026-12-01 16:02:25.010718+00
7	m007_turn_vectors_inline	2026-12-01 16:02:25.010718+00
8	m008_running_slots	2026-12-01 16:02:25.010718+00
\.


--
-- Data for Name: debates; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.debates (id, seq, topic, format, status, created_at, finished_at, platform, workspace, channel, channel_private, thread, requested_by, runner, rounds_planned, rounds_completed, effort, judge, input_tokens, output_tokens, cost_usd, error, warnings, spec, segment, rematch_of, held_by, held_since) FROM stdin;
today001	2	Tabs or spaces? 🐍 débat	challenge	completed	2025-11-24 16:01:40+00	2025-11-24 16:01:50+00	discord	G1	D9	t	th1	U1	\N	2	2	medium	openai:gpt-5	400	200	0.00335	\N	[]	{"id":"today001","topic":"Tabs or spaces? 🐍 débat","format":"challenge","rounds":2,"seats":[{"label":"A","role":"proposer","model":"anthropic:claude-sonnet-4-5"},{"label":"B","role":"challenger","model":"openai:gpt-5"}],"judge":"openai:gpt-5","tiebreak_judge":null,"effort":"medium","platform":"discord","workspace":"G1","channel":"D9","channel_private":true,"thread":"th1","requested_by":"U1","rematch_of":null}	1	\N	U1	2025-11-24 16:01:40+00
today002	3	Monorepo or polyrepo	challenge	completed	2025-11-24 16:03:20+00	2025-11-24 16:03:30+00	cli	\N	\N	f	th2	U2	\N	2	2	medium	openai:gpt-5	400	200	0.00335	\N	[]	{"id":"today002","topic":"Monorepo or polyrepo","format":"challenge","rounds":2,"seats":[{"label":"A","role":"proposer","model":"anthropic:claude-sonnet-4-5"},{"label":"B","role":"challenger","model":"openai:gpt-5"}],"judge":"openai:gpt-5","tiebreak_judge":null,"effort":"medium","platform":"cli","workspace":null,"channel":null,"channel_private":false,"thread":"th2","requested_by":"U2","rematch_of":null}	1	\N	U2	2025-11-24 16:03:20+00
today000	1	Should we rewrite the billing service in Rust?	challenge	running	2025-11-24 16:00:00+00	\N	slack	T1	C1	f	th0	U0	\N	2	2	medium	openai:gpt-5	400	200	0.00335	\N	[]	{"id":"today000","topic":"Should we rewrite the billing service in Rust?","format":"challenge","rounds":2,"seats":[{"label":"A","role":"proposer","model":"anthropic:claude-sonnet-4-5"},{"label":"B","role":"challenger","model":"openai:gpt-5"}],"judge":"openai:gpt-5","tiebreak_judge":null,"effort":"medium","platform":"slack","workspace":"T1","channel":"C1","channel_private":false,"thread":"th0","requested_by":"U0","rematch_of":null}	2	\N	U0	2025-11-24 16:08:20+00
\.


--
-- Data for Name: interjections; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.interjections (id, seq, debate_id, author, "user", platform, kind, text, round, at) FROM stdin;
24a3aef7095e	1	today000	U0	\N	cli	facts	new facts	\N	2025-11-24 16:08:20+00
6ffbc1cc5e7c	2	today000	U3	\N	cli	interjection	mind the team	\N	2025-11-24 16:08:21+00
\.


--
-- Data for Name: messages; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.messages (debate_id, key, platform, channel, message_id, final) FROM stdin;
today000	root	slack	C1	m0	t
today001	root	discord	D9	m1	t
today002	root	cli	\N	m2	t
\.


--
-- Data for Name: notices; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.notices (id, debate_id, at, level, text) FROM stdin;
1	today000	2025-11-24 16:00:05+00	warning	a seat was slow
2	today001	2025-11-24 16:01:45+00	warning	a seat was slow
3	today002	2025-11-24 16:03:25+00	warning	a seat was slow
\.


--
-- Data for Name: request_keys; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.request_keys (key, at) FROM stdin;
slack:req:1	2026-12-01 16:02:25.989328+00
\.


--
-- Data for Name: seats; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.seats (debate_id, label, role, provider, model, "position") FROM stdin;
today000	A	proposer	anthropic	anthropic:claude-sonnet-4-5	0
today000	B	challenger	openai	openai:gpt-5	1
today001	A	proposer	anthropic	anthropic:claude-sonnet-4-5	0
today001	B	challenger	openai	openai:gpt-5	1
today002	A	proposer	anthropic	anthropic:claude-sonnet-4-5	0
today002	B	challenger	openai	openai:gpt-5	1
\.


--
-- Data for Name: thread_renderers; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.thread_renderers (platform, workspace, renderer, until) FROM stdin;
slack	T1	front-1	2999-12-01 17:02:25.996494+00
\.


--
-- Data for Name: turns; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.turns (id, debate_id, round, seat, role, kind, model, text, started_at, duration_ms, input_tokens, output_tokens, cost_usd, status, error) FROM stdin;
1	today000	1	A	proposer	opening	anthropic:claude-sonnet-4-5	round 1 seat A on Should we rewrite the billing service in Rust? borrow checker	2025-11-24 16:00:01+00	1200	100	50	0.00105	ok	\N
2	today000	1	B	challenger	opening	openai:gpt-5	round 1 seat B on Should we rewrite the billing service in Rust? borrow checker	2025-11-24 16:00:01+00	1200	100	50	0.000625	ok	\N
3	today000	2	A	proposer	opening	anthropic:claude-sonnet-4-5	round 2 seat A on Should we rewrite the billing service in Rust? borrow checker	2025-11-24 16:00:02+00	1200	100	50	0.00105	ok	\N
4	today000	2	B	challenger	opening	openai:gpt-5	round 2 seat B on Should we rewrite the billing service in Rust? borrow checker	2025-11-24 16:00:02+00	1200	100	50	0.000625	ok	\N
5	today001	1	A	proposer	opening	anthropic:claude-sonnet-4-5	round 1 seat A on Tabs or spaces? 🐍 débat borrow checker	2025-11-24 16:01:41+00	1200	100	50	0.00105	ok	\N
6	today001	1	B	challenger	opening	openai:gpt-5	round 1 seat B on Tabs or spaces? 🐍 débat borrow checker	2025-11-24 16:01:41+00	1200	100	50	0.000625	ok	\N
7	today001	2	A	proposer	opening	anthropic:claude-sonnet-4-5	round 2 seat A on Tabs or spaces? 🐍 débat borrow checker	2025-11-24 16:01:42+00	1200	100	50	0.00105	ok	\N
8	today001	2	B	challenger	opening	openai:gpt-5	round 2 seat B on Tabs or spaces? 🐍 débat borrow checker	2025-11-24 16:01:42+00	1200	100	50	0.000625	ok	\N
9	today002	1	A	proposer	opening	anthropic:claude-sonnet-4-5	round 1 seat A on Monorepo or polyrepo borrow checker	2025-11-24 16:03:21+00	1200	100	50	0.00105	ok	\N
10	today002	1	B	challenger	opening	openai:gpt-5	round 1 seat B on Monorepo or polyrepo borrow checker	2025-11-24 16:03:21+00	1200	100	50	0.000625	ok	\N
11	today002	2	A	proposer	opening	anthropic:claude-sonnet-4-5	round 2 seat A on Monorepo or polyrepo borrow checker	2025-11-24 16:03:22+00	1200	100	50	0.00105	ok	\N
12	today002	2	B	challenger	opening	openai:gpt-5	round 2 seat B on Monorepo or polyrepo borrow checker	2025-11-24 16:03:22+00	1200	100	50	0.000625	ok	\N
\.


--
-- Data for Name: verdicts; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.verdicts (debate_id, winner, split, reasoning, recommendation, consensus, "json", at, number, seq) FROM stdin;
today000	A	f	clearer costs	Adopt Rust slowly	\N	{"winner":"A","split":false,"confidence":null,"evidence":[],"readings":[],"tiebreak_family":null,"judge_shares_family_with":[],"reasoning":"clearer costs","recommendation":"Adopt Rust slowly","agreements":[],"disagreements":[],"unresolved":[],"ratings":{},"scores":[],"consensus":null,"changed":null,"change_note":""}	2025-11-24 16:00:09+00	1	1
today001	A	f	clearer costs	Adopt Rust slowly	\N	{"winner":"A","split":false,"confidence":null,"evidence":[],"readings":[],"tiebreak_family":null,"judge_shares_family_with":[],"reasoning":"clearer costs","recommendation":"Adopt Rust slowly","agreements":[],"disagreements":[],"unresolved":[],"ratings":{},"scores":[],"consensus":null,"changed":null,"change_note":""}	2025-11-24 16:01:49+00	1	2
today002	A	f	clearer costs	Adopt Rust slowly	\N	{"winner":"A","split":false,"confidence":null,"evidence":[],"readings":[],"tiebreak_family":null,"judge_shares_family_with":[],"reasoning":"clearer costs","recommendation":"Adopt Rust slowly","agreements":[],"disagreements":[],"unresolved":[],"ratings":{},"scores":[],"consensus":null,"changed":null,"change_note":""}	2025-11-24 16:03:29+00	1	3
\.


--
-- Data for Name: votes; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.votes (debate_id, "user", choice, platform, at) FROM stdin;
today000	U7	side:B	slack	2025-11-24 16:00:11+00
today001	U7	side:B	discord	2025-11-24 16:01:51+00
today002	U7	side:B	cli	2025-11-24 16:03:31+00
\.


--
-- Name: debate_log_migrations_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.debate_log_migrations_id_seq', 8, true);


--
-- Name: debates_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.debates_seq_seq', 3, true);


--
-- Name: interjections_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.interjections_seq_seq', 2, true);


--
-- Name: notices_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.notices_id_seq', 3, true);


--
-- Name: turns_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.turns_id_seq', 12, true);


--
-- Name: verdicts_seq_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.verdicts_seq_seq', 3, true);


--
-- Name: channel_settings channel_settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.channel_settings
    ADD CONSTRAINT channel_settings_pkey PRIMARY KEY (platform, workspace, channel);


--
-- Name: continuations continuations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.continuations
    ADD CONSTRAINT continuations_pkey PRIMARY KEY (debate_id, segment);


--
-- Name: debate_log_migrations debate_log_migrations_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.debate_log_migrations
    ADD CONSTRAINT debate_log_migrations_name_key UNIQUE (name);


--
-- Name: debate_log_migrations debate_log_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.debate_log_migrations
    ADD CONSTRAINT debate_log_migrations_pkey PRIMARY KEY (id);


--
-- Name: debates debates_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.debates
    ADD CONSTRAINT debates_pkey PRIMARY KEY (id);


--
-- Name: debates debates_seq_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.debates
    ADD CONSTRAINT debates_seq_key UNIQUE (seq);


--
-- Name: interjections interjections_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.interjections
    ADD CONSTRAINT interjections_pkey PRIMARY KEY (id);


--
-- Name: interjections interjections_seq_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.interjections
    ADD CONSTRAINT interjections_seq_key UNIQUE (seq);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (debate_id, key);


--
-- Name: notices notices_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.notices
    ADD CONSTRAINT notices_pkey PRIMARY KEY (id);


--
-- Name: request_keys request_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.request_keys
    ADD CONSTRAINT request_keys_pkey PRIMARY KEY (key);


--
-- Name: seats seats_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.seats
    ADD CONSTRAINT seats_pkey PRIMARY KEY (debate_id, label);


--
-- Name: thread_renderers thread_renderers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.thread_renderers
    ADD CONSTRAINT thread_renderers_pkey PRIMARY KEY (platform, workspace);


--
-- Name: turns turns_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.turns
    ADD CONSTRAINT turns_pkey PRIMARY KEY (id);


--
-- Name: verdicts verdicts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.verdicts
    ADD CONSTRAINT verdicts_pkey PRIMARY KEY (debate_id, number);


--
-- Name: verdicts verdicts_seq_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.verdicts
    ADD CONSTRAINT verdicts_seq_key UNIQUE (seq);


--
-- Name: votes votes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes
    ADD CONSTRAINT votes_pkey PRIMARY KEY (debate_id, "user");


--
-- Name: continuations_requester; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX continuations_requester ON public.continuations USING btree (requested_by, at);


--
-- Name: debates_channel; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX debates_channel ON public.debates USING btree (platform, channel, created_at);


--
-- Name: debates_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX debates_created ON public.debates USING btree (created_at);


--
-- Name: debates_fts; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX debates_fts ON public.debates USING gin (topic_tsv);


--
-- Name: debates_rematch; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX debates_rematch ON public.debates USING btree (rematch_of);


--
-- Name: debates_requester; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX debates_requester ON public.debates USING btree (platform, requested_by, created_at);


--
-- Name: debates_runner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX debates_runner ON public.debates USING btree (runner, status);


--
-- Name: debates_status; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX debates_status ON public.debates USING btree (status);


--
-- Name: debates_workspace; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX debates_workspace ON public.debates USING btree (platform, workspace, created_at);


--
-- Name: interjections_debate; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX interjections_debate ON public.interjections USING btree (debate_id, round, at);


--
-- Name: messages_lookup; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_lookup ON public.messages USING btree (platform, channel, message_id);


--
-- Name: messages_not_final; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_not_final ON public.messages USING btree (key, debate_id) WHERE (NOT final);


--
-- Name: notices_debate; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX notices_debate ON public.notices USING btree (debate_id);


--
-- Name: request_keys_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX request_keys_at ON public.request_keys USING btree (at);


--
-- Name: turn_once; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX turn_once ON public.turns USING btree (debate_id, round, seat, kind);


--
-- Name: turns_debate; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX turns_debate ON public.turns USING btree (debate_id, round, id);


--
-- Name: turns_fts; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX turns_fts ON public.turns USING gin (text_tsv);


--
-- Name: verdicts_fts; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX verdicts_fts ON public.verdicts USING gin (recommendation_tsv);


--
-- Name: continuations continuations_debate_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.continuations
    ADD CONSTRAINT continuations_debate_id_fkey FOREIGN KEY (debate_id) REFERENCES public.debates(id) ON DELETE CASCADE;


--
-- Name: interjections interjections_debate_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.interjections
    ADD CONSTRAINT interjections_debate_id_fkey FOREIGN KEY (debate_id) REFERENCES public.debates(id) ON DELETE CASCADE;


--
-- Name: messages messages_debate_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_debate_id_fkey FOREIGN KEY (debate_id) REFERENCES public.debates(id) ON DELETE CASCADE;


--
-- Name: notices notices_debate_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.notices
    ADD CONSTRAINT notices_debate_id_fkey FOREIGN KEY (debate_id) REFERENCES public.debates(id) ON DELETE CASCADE;


--
-- Name: seats seats_debate_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.seats
    ADD CONSTRAINT seats_debate_id_fkey FOREIGN KEY (debate_id) REFERENCES public.debates(id) ON DELETE CASCADE;


--
-- Name: turns turns_debate_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.turns
    ADD CONSTRAINT turns_debate_id_fkey FOREIGN KEY (debate_id) REFERENCES public.debates(id) ON DELETE CASCADE;


--
-- Name: verdicts verdicts_debate_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.verdicts
    ADD CONSTRAINT verdicts_debate_id_fkey FOREIGN KEY (debate_id) REFERENCES public.debates(id) ON DELETE CASCADE;


--
-- Name: votes votes_debate_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.votes
    ADD CONSTRAINT votes_debate_id_fkey FOREIGN KEY (debate_id) REFERENCES public.debates(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--

\unrestrict jAr0fD1A4FMHg3RbMxWxXzWahVHyV76e2KBBpfNLyhysjBRnN9qGsOR2Gn8iXmV

