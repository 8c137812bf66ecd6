"""The evidence frames of the synthetic LongMemEval-shaped benchmark: for each question
type, what the user (or the assistant) says that answers the question, the question, and
decoys that share its words and entities but not its fact.

``{v}`` is the answer's value (drawn from ``slot``), ``{d}`` a decoy's value (the same slot,
another value); any other ``{slot}`` is drawn from the vocabulary.
"""

from __future__ import annotations

from typing import Final, TypedDict


class UserFrame(TypedDict):
    """single-session-user: the user states a fact about themselves once."""

    topic: str
    slot: str
    fact: tuple[str, ...]
    ask: tuple[str, ...]
    decoy: tuple[str, ...]
    absent: str


class AssistantFrame(TypedDict):
    """single-session-assistant: the user asks (naming ``{k}``, a key from ``key``), the
    assistant recommends ``{v}``; the question asks what the assistant said."""

    topic: str
    key: str
    slot: str
    request: tuple[str, ...]
    say: tuple[str, ...]
    ask: tuple[str, ...]
    absent: str


class PreferenceFrame(TypedDict):
    """single-session-preference: a stated preference; the question asks for advice that
    should follow it, without naming it."""

    topic: str
    state: tuple[str, ...]
    ask: tuple[str, ...]
    rubric: str
    decoy: tuple[str, ...]


class UpdateFrame(TypedDict):
    """knowledge-update: a value stated, then changed once or twice; the latest holds."""

    topic: str
    slot: str
    first: tuple[str, ...]
    later: tuple[str, ...]
    ask: tuple[str, ...]
    absent: str


class CountFrame(TypedDict):
    """multi-session: one item per session; the question counts or sums them."""

    topic: str
    slot: str
    item: tuple[str, ...]
    decoy: tuple[str, ...]
    ask: str
    total: bool
    """True: sum the ``{n}`` amounts; False: count the items."""


class EventFrame(TypedDict):
    """temporal-reasoning: an event told on the day it happened."""

    topic: str
    slot: str
    done: tuple[str, ...]
    plan: tuple[str, ...]
    phrase: str
    """The event in a question ("buy {v}"): past-tense-free, for "did I ..."."""
    noun: str
    """The event as a noun phrase ("buying {v}")."""


USER: Final[tuple[UserFrame, ...]] = (
    {
        "topic": "pets",
        "slot": "pet_name",
        "fact": (
            "My cat {v} keeps knocking things off the desk while I work.",
            "We adopted a cat last spring and named her {v}; she's settled in now.",
        ),
        "ask": ("What is the name of my cat?", "What did I name my cat?"),
        "decoy": (
            "My {relation}'s cat {d} is staying with us for a few days.",
            "The shelter had a cat called {d} that I almost adopted.",
        ),
        "absent": "What is the name of my parrot?",
    },
    {
        "topic": "work",
        "slot": "job",
        "fact": (
            "I started a new position as a {v} at {company} last month.",
            "As a {v}, most of my week is meetings and reports.",
        ),
        "ask": ("What is my job title?", "What do I do for work?"),
        "decoy": (
            "My {relation} {name} just got hired as a {d}.",
            "I once considered retraining as a {d}, but never did.",
        ),
        "absent": "What was the name of the company I worked at before my current job?",
    },
    {
        "topic": "garden",
        "slot": "plant",
        "fact": (
            "This year I planted {v} on the balcony for the first time.",
            "I put in {v} along the fence in the back garden last week.",
        ),
        "ask": ("What did I plant this year?", "What did I put in along the fence?"),
        "decoy": (
            "My neighbour {name} is growing {d} and they look amazing.",
            "I thought about planting {d} but there isn't enough sun.",
        ),
        "absent": "What fruit trees did I plant in the front yard?",
    },
    {
        "topic": "learning",
        "slot": "language",
        "fact": (
            "I've been learning {v} on the train every morning for a few months.",
            "My goal this year is to hold a basic conversation in {v}; I practise daily.",
        ),
        "ask": ("Which language am I learning?", "What language do I practise on the train?"),
        "decoy": (
            "My {relation} {name} speaks fluent {d}.",
            "I took {d} in school but forgot most of it.",
        ),
        "absent": "Which language did I study during my exchange semester?",
    },
    {
        "topic": "learning",
        "slot": "instrument",
        "fact": (
            "I finally bought a {v} and I'm taking lessons on Thursday evenings.",
            "I've been practising the {v} for about twenty minutes every night.",
        ),
        "ask": ("Which instrument am I learning to play?", "What instrument do I practise?"),
        "decoy": (
            "My {relation} {name} used to play the {d} in a band.",
            "There's a {d} for sale at the music shop near {store}.",
        ),
        "absent": "How many years did I play in the school orchestra?",
    },
    {
        "topic": "fitness",
        "slot": "sport",
        "fact": (
            "I joined a {v} club in January and go every weekend.",
            "My main sport these days is {v}; I try to go three times a week.",
        ),
        "ask": ("What sport do I do every weekend?", "Which club did I join in January?"),
        "decoy": (
            "{name} keeps trying to get me into {d}, but I'm not sold.",
            "I watched a {d} tournament on TV last night.",
        ),
        "absent": "What position did I play on my high school team?",
    },
    {
        "topic": "cooking",
        "slot": "ingredient",
        "fact": (
            "I'm allergic to {v}, so I always have to check the labels.",
            "Just so you know, I can't eat {v}; my doctor confirmed the allergy.",
        ),
        "ask": ("What am I allergic to?", "Which food did my doctor say I can't eat?"),
        "decoy": (
            "My {relation} {name} can't stand {d}, so I leave it out when they visit.",
            "I've been cooking a lot with {d} lately.",
        ),
        "absent": "Which medication am I allergic to?",
    },
    {
        "topic": "shopping",
        "slot": "car",
        "fact": (
            "I drive {v}, so the boot space is a bit limited.",
            "We finally replaced the old car with {v} in the spring.",
        ),
        "ask": ("What car do I drive?", "What car did we replace the old one with?"),
        "decoy": (
            "My {relation} just bought {d} and won't stop talking about it.",
            "I test-drove {d} but it felt too big.",
        ),
        "absent": "What colour is my motorbike?",
    },
    {
        "topic": "books",
        "slot": "book",
        "fact": (
            "My favourite book of all time is {v}; I reread it every winter.",
            "Nothing has topped {v} for me, I've read it four times.",
        ),
        "ask": ("What is my favourite book?", "Which book do I reread every winter?"),
        "decoy": (
            "{name} lent me {d} but I couldn't get into it.",
            "My book club read {d} last month; it was fine.",
        ),
        "absent": "Who is my favourite poet?",
    },
    {
        "topic": "home",
        "slot": "color",
        "fact": (
            "We painted the {room} {v} over the long weekend.",
            "The {room} is {v} now, we finished painting it on Sunday.",
        ),
        "ask": ("What colour did we paint the room?", "What colour is the room we painted?"),
        "decoy": (
            "My {relation} painted their hallway {d}, and it looks great.",
            "The paint shop suggested {d}, but we weren't convinced.",
        ),
        "absent": "What flooring did we put in the basement?",
    },
    {
        "topic": "travel",
        "slot": "city",
        "fact": (
            "I grew up in {v}, so I still know all the good bakeries there.",
            "Before moving here I lived in {v} for most of my childhood.",
        ),
        "ask": ("Where did I grow up?", "Which city did I live in as a child?"),
        "decoy": (
            "My {relation} {name} is moving to {d} next year.",
            "I'd love to visit {d} someday.",
        ),
        "absent": "Which university did I attend?",
    },
    {
        "topic": "learning",
        "slot": "hobby",
        "fact": (
            "I picked up {v} as a hobby this year and I'm hooked.",
            "On weekends I do {v}; it's the one thing that really relaxes me.",
        ),
        "ask": ("What hobby did I pick up this year?", "What do I do on weekends to relax?"),
        "decoy": (
            "My {relation} {name} is really into {d}.",
            "There's a {d} workshop near my office I keep meaning to try.",
        ),
        "absent": "Which club did I found at university?",
    },
    {
        "topic": "health",
        "slot": "symptom",
        "fact": (
            "I've been dealing with {v} since I started the new job.",
            "The physio said my {v} comes from sitting too long.",
        ),
        "ask": (
            "What health issue have I been dealing with?",
            "What did the physio say my problem comes from?",
        ),
        "decoy": (
            "My {relation} has {d} and tried acupuncture for it.",
            "I read an article about {d} on the weekend.",
        ),
        "absent": "What surgery did I have as a teenager?",
    },
    {
        "topic": "coding",
        "slot": "lang",
        "fact": (
            "At work our whole backend is written in {v}, which I maintain.",
            "I mostly write {v} at my job these days.",
        ),
        "ask": (
            "What language is our backend at work written in?",
            "Which programming language do I use most at work?",
        ),
        "decoy": (
            "{name} on my team wants to rewrite everything in {d}.",
            "I did a weekend course on {d} but never used it.",
        ),
        "absent": "What was the first programming language I learned?",
    },
    {
        "topic": "music",
        "slot": "band",
        "fact": (
            "I saw {v} live last summer and it was the best concert of my life.",
            "My all-time favourite artist is {v}; I know every album.",
        ),
        "ask": ("Which artist did I see live last summer?", "Who is my favourite artist?"),
        "decoy": (
            "My {relation} {name} has tickets for {d} next month.",
            "The radio keeps playing {d} lately.",
        ),
        "absent": "Which festival did I volunteer at?",
    },
    {
        "topic": "shopping",
        "slot": "store",
        "fact": (
            "I do almost all my grocery shopping at {v}; it's on my way home.",
            "My weekly grocery run is always at {v}.",
        ),
        "ask": (
            "Where do I usually buy groceries?",
            "Which shop do I do my weekly grocery run at?",
        ),
        "decoy": (
            "{name} swears {d} is cheaper, but I'm not sure.",
            "{d} opened a new branch downtown.",
        ),
        "absent": "Which pharmacy do I use?",
    },
    {
        "topic": "fitness",
        "slot": "shoe",
        "fact": (
            "I run in {v} shoes; they're the only ones that don't hurt my knees.",
            "My running shoes are {v}, and I replace them every 500 miles.",
        ),
        "ask": ("Which running shoes do I use?", "What shoes do I run in?"),
        "decoy": (
            "My {relation} {name} runs in {d} and loves them.",
            "The store had {d} on sale, but I didn't buy them.",
        ),
        "absent": "Which hiking boots do I wear?",
    },
    {
        "topic": "cooking",
        "slot": "drink",
        "fact": (
            "I start every day with a {v}; I can't function without it.",
            "My morning drink is always a {v}.",
        ),
        "ask": ("What do I drink every morning?", "What is my morning drink?"),
        "decoy": (
            "{name} only drinks {d} in the morning.",
            "The cafe downstairs makes a great {d}.",
        ),
        "absent": "What cocktail did I order at my birthday?",
    },
)

ASSISTANT: Final[tuple[AssistantFrame, ...]] = (
    {
        "topic": "cooking",
        "key": "cuisine",
        "slot": "dish",
        "request": ("Can you suggest a {k} dish for a dinner party of six?",),
        "say": (
            "For a {k} dinner party I'd suggest {v}. It scales well and you can prepare most "
            "of it before guests arrive.",
        ),
        "ask": (
            "What dish did you suggest for my dinner party when I asked about {k} food?",
            "You recommended a {k} dish for my dinner party. What was it?",
        ),
        "absent": "Which dessert wine did you pair with the {k} dish you suggested?",
    },
    {
        "topic": "books",
        "key": "genre",
        "slot": "book",
        "request": ("I want to get into {k}. What one book would you start with?",),
        "say": ("If you're new to {k}, start with {v}; it's accessible and hard to put down.",),
        "ask": (
            "Which book did you recommend when I wanted to get into {k}?",
            "What was the {k} book you told me to start with?",
        ),
        "absent": "Which audiobook narrator did you recommend for the {k} book?",
    },
    {
        "topic": "coding",
        "key": "bug",
        "slot": "tool",
        "request": ("I think I have {k} in production. What tool would help me find it?",),
        "say": (
            "For {k}, I'd reach for {v} first: reproduce it there and inspect the state "
            "step by step.",
        ),
        "ask": (
            "What tool did you suggest when I had {k} in production?",
            "Which tool did you recommend for tracking down {k}?",
        ),
        "absent": "What monitoring service did you suggest for {k}?",
    },
    {
        "topic": "fitness",
        "key": "sport",
        "slot": "exercise",
        "request": ("What's one exercise that would help my {k}?",),
        "say": ("For {k}, add {v} twice a week; it builds exactly the strength you need.",),
        "ask": (
            "Which exercise did you recommend to help my {k}?",
            "You suggested an exercise for {k}. Which one?",
        ),
        "absent": "How many calories did you say {k} burns per hour?",
    },
    {
        "topic": "travel",
        "key": "city",
        "slot": "dish",
        "request": ("I'm visiting {k} soon. What's one thing I must eat there?",),
        "say": (
            "In {k}, don't leave without trying {v} at a small local place; it's a "
            "highlight for a lot of visitors.",
        ),
        "ask": (
            "What did you say I must eat in {k}?",
            "Which food did you recommend I try in {k}?",
        ),
        "absent": "Which hotel did you recommend in {k}?",
    },
    {
        "topic": "shopping",
        "key": "hobby",
        "slot": "gadget",
        "request": ("What's a good gift for someone who's into {k}?",),
        "say": (
            "For someone into {k}, {v} is a surprisingly good gift; it's useful and "
            "people rarely buy it for themselves.",
        ),
        "ask": (
            "What gift did you suggest for someone into {k}?",
            "You recommended a gift for a friend who likes {k}. What was it?",
        ),
        "absent": "Which shop did you say sells {k} supplies?",
    },
    {
        "topic": "learning",
        "key": "language",
        "slot": "app",
        "request": ("Which app would you use to learn {k} vocabulary?",),
        "say": ("For {k} vocabulary, use {v}; its review schedule keeps words from slipping.",),
        "ask": (
            "Which app did you recommend for learning {k} vocabulary?",
            "What app did you suggest for {k}?",
        ),
        "absent": "Which {k} tutor did you recommend?",
    },
    {
        "topic": "books",
        "key": "movie",
        "slot": "book",
        "request": ("I just watched {k} and loved it. Any book with a similar feel?",),
        "say": ("If you loved {k}, read {v}; it has the same mood and ambition.",),
        "ask": (
            "What book did you recommend after I watched {k}?",
            "Which book did you say has a similar feel to {k}?",
        ),
        "absent": "Which director did you compare to the one of {k}?",
    },
    {
        "topic": "home",
        "key": "room",
        "slot": "color",
        "request": ("What paint colour would you pick for a small north-facing {k}?",),
        "say": ("For a small north-facing {k}, I'd pick {v}; it keeps the room warm.",),
        "ask": (
            "What paint colour did you suggest for my {k}?",
            "Which colour did you recommend for the north-facing {k}?",
        ),
        "absent": "Which flooring did you recommend for the {k}?",
    },
)

PREFERENCE: Final[tuple[PreferenceFrame, ...]] = (
    {
        "topic": "travel",
        "state": (
            "I always book an aisle seat and I never take red-eye flights; I can't sleep on planes.",
        ),
        "ask": ("Can you help me pick a flight to {city} for next month?",),
        "rubric": "an aisle seat and no overnight flight",
        "decoy": ("My {relation} {name} always takes red-eye flights to save money.",),
    },
    {
        "topic": "cooking",
        "state": ("I've been vegetarian for years, and I like food with a lot of heat.",),
        "ask": ("What should I cook for dinner this weekend?",),
        "rubric": "spicy vegetarian dishes",
        "decoy": ("{name} hates anything spicy, so I cook mild when they visit.",),
    },
    {
        "topic": "books",
        "state": (
            "I only enjoy short novels, under three hundred pages, ideally with an unreliable "
            "narrator.",
        ),
        "ask": ("Any suggestions for my next read?",),
        "rubric": "short novels with an unreliable narrator",
        "decoy": ("My book club loves long family sagas, which I find tiring.",),
    },
    {
        "topic": "fitness",
        "state": (
            "I prefer working out at home in the early morning, with no equipment beyond a mat.",
        ),
        "ask": ("Could you put together a workout plan for me?",),
        "rubric": "an early-morning, no-equipment home workout",
        "decoy": ("{name} goes to the gym every evening and lifts heavy.",),
    },
    {
        "topic": "coding",
        "state": (
            "I like small libraries with typed APIs and I avoid big frameworks whenever I can.",
        ),
        "ask": ("What should I use to build a small web service?",),
        "rubric": "a small, typed library rather than a big framework",
        "decoy": ("My team lead loves large batteries-included frameworks.",),
    },
    {
        "topic": "music",
        "state": ("I mostly listen to instrumental music while working; lyrics distract me.",),
        "ask": ("Can you suggest something to listen to during my focus hours?",),
        "rubric": "instrumental music without lyrics",
        "decoy": ("My {relation} plays loud pop with lyrics all day.",),
    },
    {
        "topic": "shopping",
        "state": (
            "I try to buy second-hand first and I care about repairable, long-lasting products.",
        ),
        "ask": ("I need a new laptop. What would you suggest?",),
        "rubric": "a refurbished or repairable, long-lasting laptop",
        "decoy": ("{name} always buys the newest model the day it comes out.",),
    },
    {
        "topic": "travel",
        "state": (
            "On holiday I like quiet small towns and long walks more than big cities and nightlife.",
        ),
        "ask": ("Where should I go for a week off in the autumn?",),
        "rubric": "quiet small towns with walking, not big cities",
        "decoy": ("My {relation} {name} loves big-city nightlife on holiday.",),
    },
    {
        "topic": "health",
        "state": (
            "I don't drink coffee at all; caffeine makes me anxious, so I stick to herbal tea.",
        ),
        "ask": ("What could help me stay alert in the afternoon slump?",),
        "rubric": "caffeine-free ways to stay alert",
        "decoy": ("{name} drinks four espressos a day and swears by it.",),
    },
)

UPDATE: Final[tuple[UpdateFrame, ...]] = (
    {
        "topic": "work",
        "slot": "minutes",
        "first": ("My commute to the office takes about {v} minutes each way.",),
        "later": (
            "Since the move, my commute is now {v} minutes each way.",
            "Quick update: my commute changed, it's {v} minutes now with the new bus line.",
        ),
        "ask": ("How long is my commute now?", "How many minutes does my commute take these days?"),
        "absent": "How long was my commute when I lived abroad?",
    },
    {
        "topic": "fitness",
        "slot": "small",
        "first": ("I go running {v} times a week at the moment.",),
        "later": (
            "I've stepped it up: I now run {v} times a week.",
            "Training changed again, I'm running {v} times a week now.",
        ),
        "ask": ("How many times a week do I run now?", "How often do I currently go running?"),
        "absent": "How many times a week do I swim now?",
    },
    {
        "topic": "work",
        "slot": "job",
        "first": ("I work as a {v} right now.",),
        "later": (
            "Big news: I got promoted and I'm a {v} now.",
            "I switched roles, I'm now working as a {v}.",
        ),
        "ask": ("What is my current role?", "What job do I have now?"),
        "absent": "What was my salary in my previous role?",
    },
    {
        "topic": "pets",
        "slot": "small",
        "first": ("We have {v} pets at home at the moment.",),
        "later": (
            "We adopted again, so now we have {v} pets at home.",
            "Our household grew, there are {v} pets at home now.",
        ),
        "ask": ("How many pets do we have at home now?",),
        "absent": "How many horses do we own?",
    },
    {
        "topic": "money",
        "slot": "amount",
        "first": ("My monthly grocery budget is {v} dollars a week, roughly.",),
        "later": (
            "I've adjusted my grocery budget, it's {v} dollars a week now.",
            "New plan: my grocery budget is now {v} dollars a week.",
        ),
        "ask": (
            "What is my grocery budget now?",
            "How much do I budget for groceries each week now?",
        ),
        "absent": "What is my budget for rent?",
    },
    {
        "topic": "books",
        "slot": "book",
        "first": ("I'm currently reading {v}.",),
        "later": (
            "I've moved on, now I'm reading {v}.",
            "Finished that one; I'm reading {v} at the moment.",
        ),
        "ask": ("What book am I reading now?", "Which book am I currently reading?"),
        "absent": "Which magazine am I subscribed to?",
    },
    {
        "topic": "travel",
        "slot": "city",
        "first": ("We're planning our summer holiday in {v}.",),
        "later": (
            "Change of plans: our summer holiday will be in {v} instead.",
            "We've rebooked, the summer holiday is now going to be in {v}.",
        ),
        "ask": (
            "Where are we going for our summer holiday?",
            "Where is our summer holiday now planned?",
        ),
        "absent": "Where are we going for the winter holiday?",
    },
    {
        "topic": "fitness",
        "slot": "pb",
        "first": ("My 5k personal best is {v} at the moment.",),
        "later": (
            "New personal best! My 5k time is now {v}.",
            "I beat my record, my 5k personal best is {v} now.",
        ),
        "ask": ("What is my current 5k personal best?",),
        "absent": "What is my marathon personal best?",
    },
    {
        "topic": "learning",
        "slot": "app",
        "first": ("I keep all my notes in {v} these days.",),
        "later": (
            "I migrated everything, my notes live in {v} now.",
            "I switched note apps again, I'm on {v} now.",
        ),
        "ask": ("Which app do I keep my notes in now?",),
        "absent": "Which app do I use for my calendar?",
    },
    {
        "topic": "cooking",
        "slot": "drink",
        "first": ("My usual order at the cafe is a {v}.",),
        "later": (
            "I changed my usual cafe order, it's a {v} now.",
            "These days my cafe order is a {v}.",
        ),
        "ask": ("What is my usual cafe order now?",),
        "absent": "What is my usual order at the pizza place?",
    },
)

COUNT: Final[tuple[CountFrame, ...]] = (
    {
        "topic": "books",
        "slot": "book",
        "item": ("I just finished reading {v}.", "Finally finished {v} last night."),
        "decoy": (
            "I started {d} but gave up after a few chapters.",
            "{name} keeps telling me to read {d}.",
        ),
        "ask": "How many books did I finish reading?",
        "total": False,
    },
    {
        "topic": "shopping",
        "slot": "gadget",
        "item": ("I bought {v} for {n} dollars.", "I picked up {v}, it was {n} dollars."),
        "decoy": (
            "I almost bought {d}, but it was too expensive.",
            "{name} bought {d} for their flat.",
        ),
        "ask": "How much did I spend in total on the gadgets I bought?",
        "total": True,
    },
    {
        "topic": "fitness",
        "slot": "sport",
        "item": ("I tried {v} for the first time today.", "Today was my first ever {v} session."),
        "decoy": (
            "I'm thinking about trying {d} sometime.",
            "{name} invited me to {d} but I said no.",
        ),
        "ask": "How many new sports have I tried for the first time?",
        "total": False,
    },
    {
        "topic": "travel",
        "slot": "city",
        "item": ("I just got back from a trip to {v}.", "I'm back home after a few days in {v}."),
        "decoy": ("I'd love to visit {d} one day.", "My {relation} {name} just moved to {d}."),
        "ask": "How many cities have I travelled to and come back from?",
        "total": False,
    },
    {
        "topic": "cooking",
        "slot": "dish",
        "item": (
            "I cooked {v} for friends tonight and it turned out great.",
            "Made {v} for the first time today.",
        ),
        "decoy": ("I want to try making {d} someday.", "{name} made {d} for the potluck."),
        "ask": "How many different dishes did I cook for the first time or for friends?",
        "total": False,
    },
    {
        "topic": "home",
        "slot": "amount",
        "item": (
            "The plumber charged me {n} dollars to fix the {room}.",
            "I paid {n} dollars for the {room} repair.",
        ),
        "decoy": (
            "The quote for the {room} was {d} dollars, but I didn't go ahead.",
            "{name} paid {d} dollars for their {room}.",
        ),
        "ask": "How much have I paid in total for home repairs?",
        "total": True,
    },
    {
        "topic": "learning",
        "slot": "hobby",
        "item": (
            "I went to my first {v} class this evening.",
            "Tried a {v} workshop today, really fun.",
        ),
        "decoy": ("{name} runs a {d} class I might join.", "I saw a flyer for a {d} course."),
        "ask": "How many different hobby classes or workshops have I attended?",
        "total": False,
    },
)

EVENT: Final[tuple[EventFrame, ...]] = (
    {
        "topic": "shopping",
        "slot": "gadget",
        "done": ("I bought {v} today.", "Picked up {v} this morning."),
        "plan": ("I'm thinking about buying {v} at some point.",),
        "phrase": "buy {v}",
        "noun": "buying {v}",
    },
    {
        "topic": "shopping",
        "slot": "clothing",
        "done": ("I got {v} at {store} today.", "Bought {v} this afternoon."),
        "plan": ("I might need {v} before winter.",),
        "phrase": "buy {v}",
        "noun": "buying {v}",
    },
    {
        "topic": "travel",
        "slot": "city",
        "done": ("I just landed in {v} for my trip!", "Today is the first day of my trip to {v}."),
        "plan": ("Someday I want to plan a trip to {v}.",),
        "phrase": "start my trip to {v}",
        "noun": "my trip to {v}",
    },
    {
        "topic": "travel",
        "slot": "park",
        "done": ("Today I hiked in {v}, what a view.", "Spent the whole day hiking in {v} today."),
        "plan": ("I'd like to hike in {v} next year.",),
        "phrase": "go hiking in {v}",
        "noun": "my hike in {v}",
    },
    {
        "topic": "work",
        "slot": "event",
        "done": ("I had {v} today and I'm exhausted.", "Today was {v}, it went well."),
        "plan": ("There's {v} coming up that I'm nervous about.",),
        "phrase": "attend {v}",
        "noun": "{v}",
    },
    {
        "topic": "health",
        "slot": "symptom",
        "done": (
            "I saw a doctor about my {v} today.",
            "Had a doctor's appointment for my {v} this morning.",
        ),
        "plan": ("I should see a doctor about my {v} soon.",),
        "phrase": "see a doctor about my {v}",
        "noun": "my doctor's visit about {v}",
    },
    {
        "topic": "cooking",
        "slot": "dish",
        "done": ("I took a cooking class today and we made {v}.",),
        "plan": ("I want to take a class on making {v}.",),
        "phrase": "take the cooking class where we made {v}",
        "noun": "the cooking class where we made {v}",
    },
    {
        "topic": "music",
        "slot": "band",
        "done": ("I saw {v} in concert tonight!", "Just got home from the {v} concert."),
        "plan": ("{v} are touring soon, maybe I'll go.",),
        "phrase": "see {v} in concert",
        "noun": "the {v} concert",
    },
    {
        "topic": "home",
        "slot": "room",
        "done": (
            "We finished renovating the {v} today.",
            "The {v} renovation is finally done as of today.",
        ),
        "plan": ("We're considering renovating the {v} next year.",),
        "phrase": "finish renovating the {v}",
        "noun": "the {v} renovation",
    },
)
