"""Does the model's input still hold the early turn the question depends on, after reducing?

The question (the ``SelectRelevant`` issue): in a long tool-calling chat the user states a
fact early on (a booking code, a name, an amount, an address) and, many turns later, asks
for it back in other words. Reduced to a token budget, does the list still contain the
turn that stated the fact, with relevance selection against recency-only trimming?

Scenarios are generated (seeded, no network, no data files): a system prompt, then 40-120
turns of small talk and tool use over several topics (weather, search, restaurants,
currency, parcels, calendar, cooking, code, fitness, ...), with

* one *fact* turn at a random early position (the first third of the chat);
* one to three *other facts* of other kinds, and sometimes another fact of the same kind
  about something else (the Porto hotel's code when the question is about Lisbon);
* three to seven *distractor* turns sharing words with the question but not the fact
  ("any good restaurants near the hotel in Lisbon?");
* a final question asking for the fact, built from its own templates and synonyms,
  independently of the fact's wording ("what's the booking reference for where I'm
  staying in Lisbon?" for "I booked the Lisbon hotel, reservation QX-4471").

Each scenario is reduced to the same budget (2,000 and 4,000 tokens, by our default
estimate) by:

* (a) ours, ``policy=[SelectRelevant(), DropOldest()]``, the default BM25 scorer;
* (b) ours, ``policy=[DropOldest()]``: recency only;
* (c) LangChain's ``trim_messages(strategy="last", token_counter=count_tokens_approximately,
  max_tokens=budget, start_on="human", include_system=True)`` on the same chat converted to
  LangChain messages;
* (d) ours, ``SelectRelevant(embeddings=...)`` with a hashed bag-of-words ``Embeddings``
  written here (no model, no dependency): it shows the embeddings path, not what a real
  embedding model would score;
* (e) ours, long-term memory: the chat grows turn by turn through a persistent reducer
  (``DropOldest``) whose ``StoreMemory`` writes what it prunes into an ``InMemoryStore``
  indexed with ``HashedWordEmbeddings`` (deterministic, no network); the model's input for
  the question is the view with ``[Recall(store, k=3, max_tokens=200), DropOldest()]``. The
  fact counts as kept when the input holds its text (a memory block's line counts). Its
  ms/reduce is the view alone (growing the chat is not timed);
* (f) langmem's memory tools, in their own venv: ``manage_memory(create)`` for every user
  message as it arrives and ``search_memory(question, limit=3)`` at the end, on an
  ``InMemoryStore`` with the same ``HashedWordEmbeddings``, invoked as a scripted agent
  would call them (``bench/_langmem_worker.py``); recalled when a result holds the fact.

Per budget and contender: the share of scenarios whose reduced list still contains the
fact turn's user message, the mean and largest size of the reduced list by our default
estimate (and, for ``trim_messages``, by its own counter), how many lists were over the
budget or provider-invalid (``MessageReducer.validate``: an orphan tool result or a
dangling tool call), and the mean CPU milliseconds per reduce (``time.process_time`` around
the reduce call alone, after one untimed warm-up call). Then the share kept per fact kind,
and split by whether the question shares a term (``relevance.terms``: stemmed, without
stopwords) with the fact at all, so the misses show where they are.

The ratios in the ``RESULT`` line divide the scenarios that *lost* the fact (recency-only
or ``trim_messages`` misses over ours; a denominator of 0 counts as 1), so > 1 means ours
loses it less often.

Usage::

    python bench/relevance.py            # 200 scenarios
    python bench/relevance.py --quick    # 50 scenarios

The last line is ``RESULT {json}`` (see bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.store.memory import InMemoryStore

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import StoreMemory
from agentstate_reducer.langgraph.testing import HashedWordEmbeddings
from agentstate_reducer.policy import DropOldest, Recall, SelectRelevant
from agentstate_reducer.relevance import terms

BUDGETS = (2000, 4000)
SEED = 20240611

Message = dict[str, Any]

# --------------------------------------------------------------------------------------
# Word lists
# --------------------------------------------------------------------------------------


def _words(text: str, sep: str | None = None) -> tuple[str, ...]:
    """The words of ``text`` (split at ``sep``, by default at whitespace)."""
    return tuple(text.split(sep))


CITIES = _words(
    "Lisbon Porto Madrid Seville Valencia Barcelona Rome Florence Naples Milan Vienna Prague "
    "Budapest Krakow Berlin Munich Hamburg Amsterdam Rotterdam Brussels Copenhagen Stockholm "
    "Oslo Helsinki Dublin Edinburgh Athens Zurich Geneva Lyon Marseille Toronto Montreal "
    "Chicago Denver Seattle Austin Boston Kyoto Osaka Seoul Singapore"
)

FIRST_NAMES = _words(
    "Amara Bianca Carlos Dmitri Elena Farid Greta Hiroshi Ingrid Jonas Keiko Lucia Marek "
    "Nadia Oskar Priya Quentin Rosa Stefan Tamsin Umar Valentina Wendell Ximena Yusuf Zofia "
    "Aurelio Beatrix Cormac Delphine Emeric Fiona Gideon Helga Ignacio Juniper"
)

PET_NAMES = _words(
    "Biscuit Pepper Mochi Olive Rocket Pickle Maple Ziggy Bean Noodle Clover Pixel Waffle "
    "Luna Otto Pumpkin Sprout Nutmeg Gizmo Tofu"
)

SURNAMES = _words(
    "Albrecht Brennan Castillo Dubois Eriksen Fontaine Garibaldi Halvorsen Ivanova Jansen "
    "Kowalski Lindqvist Moreau Novak Okafor Petrov Quinlan Rinaldi Sorensen Takahashi"
)

STREETS = _words(
    "Harbour Lane|Maple Avenue|Elm Street|Kingsway|Rosemary Close|Station Road|Willow "
    "Crescent|Orchard Row|Chapel Street|Ferry Road|Beacon Hill|Juniper Court|Old Mill Lane|"
    "Canal Walk|Lighthouse Drive|Cedar Grove",
    sep="|",
)

TOWNS = _words("Bristol Leeds Bath York Galway Cork Utrecht Ghent Bergen Malmo Graz Basel")

AIRLINES = _words("TP IB LH KL AF BA UA DL AZ SK OS LX EI AY")
MONTHS = _words("January February March April May June July August September October")
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
CONDITIONS = ("sunny", "partly cloudy", "overcast", "light rain", "showers", "windy", "clear")
CUISINES = ("tapas", "seafood", "ramen", "pizza", "vegetarian", "Thai", "Georgian", "sushi")
CURRENCIES = ("EUR", "USD", "GBP", "CHF", "SEK", "JPY", "CAD", "DKK")
CARRIERS = ("DHL", "UPS", "FedEx", "PostNL", "Royal Mail", "GLS")

SYSTEM_PROMPT = (
    "You are a helpful personal assistant. You can look up the weather, search the web, "
    "find restaurants, convert currencies and units, check calendars and track parcels. "
    "Answer briefly and use the tools when they help."
)

# Small talk by topic: what the user asks, and sentences the assistant answers with.
TOPICS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cooking": (
        (
            "How long should I roast a chicken of about two kilos?",
            "Can I swap buttermilk for regular milk in pancakes?",
            "What's a quick weeknight dinner with chickpeas and spinach?",
            "Why does my risotto always come out gluey?",
            "Is it worth brining pork chops overnight?",
            "How do I keep basil fresh for more than a day or two?",
            "What spices go into a basic garam masala?",
            "My sourdough starter smells like nail polish, is it dead?",
        ),
        (
            "Roast it at 200°C for roughly 20 minutes per 500 g plus 20 minutes extra.",
            "Check that the thickest part of the thigh reaches 75°C before you carve.",
            "A splash of lemon juice in the milk gets you close to buttermilk.",
            "Stir the rice less and add the stock a ladle at a time.",
            "A short brine of a few hours already makes a visible difference.",
            "Keep the stems in a glass of water on the counter, not in the fridge.",
            "Toast the whole spices before grinding them for a deeper flavour.",
            "That acetone smell usually means the starter is hungry; feed it twice a day.",
            "Chickpeas, garlic, spinach and a tin of tomatoes make a good base.",
        ),
    ),
    "fitness": (
        (
            "How many rest days a week should I take when training for a 10k?",
            "Is it bad to run on an empty stomach in the morning?",
            "What's a decent beginner routine for the rowing machine?",
            "My knees ache after squats, am I doing them wrong?",
            "How much protein do I actually need per day?",
            "Should I stretch before or after lifting?",
            "What's a good pace for an easy long run?",
        ),
        (
            "Two rest days a week is a sensible start; listen to how your legs feel.",
            "Easy runs on an empty stomach are fine for most people if they stay short.",
            "Try intervals of two minutes hard and one minute easy, repeated six times.",
            "Keep your knees tracking over your toes and sit back into the movement.",
            "Around 1.6 grams per kilo of body weight is a common target when training.",
            "Dynamic warm-ups before, static stretching after, tends to work best.",
            "An easy pace is one where you could still hold a conversation.",
        ),
    ),
    "code": (
        (
            "Why does my Python script say 'list index out of range'?",
            "What's the difference between a process and a thread?",
            "How do I undo my last git commit but keep the changes?",
            "Is there a way to pretty-print JSON from the command line?",
            "My Docker container exits immediately, how do I debug it?",
            "Should I use a dataclass or a NamedTuple here?",
            "How do I find which process is using port 8080?",
        ),
        (
            "You are reading past the end of the list; check the length first.",
            "Threads share memory within one process, processes do not.",
            "Run git reset --soft HEAD~1 to keep the changes staged.",
            "Pipe it through python -m json.tool or jq for a readable view.",
            "Run it with an interactive shell and look at the logs with docker logs.",
            "A dataclass is mutable by default and easier to extend later.",
            "lsof -i :8080 shows the process holding the port.",
        ),
    ),
    "garden": (
        (
            "When should I prune the apple tree?",
            "Why are the leaves on my tomato plants turning yellow?",
            "What can I plant in a shady corner of the garden?",
            "How often should I water succulents in summer?",
            "Is it too late to sow carrots this month?",
        ),
        (
            "Late winter, while the tree is dormant, is the usual time for apples.",
            "Yellow lower leaves often mean overwatering or a lack of nitrogen.",
            "Ferns, hostas and foxgloves are happy in partial shade.",
            "Water succulents deeply but only when the soil has dried out.",
            "Quick varieties can still be sown for a late crop if the soil is warm.",
        ),
    ),
    "books": (
        (
            "Can you recommend a good mystery novel that isn't too long?",
            "What should I read after finishing The Left Hand of Darkness?",
            "Is the film of Dune worth watching before reading the book?",
            "Any podcasts about the history of science?",
            "What's a good board game for four people who don't like long rules?",
        ),
        (
            "A short classic would be The Murder of Roger Ackroyd.",
            "The Dispossessed by the same author is a natural next step.",
            "The film follows the first half of the book closely.",
            "A podcast walking through one scientific discovery per episode is a good pick.",
            "Codenames and Just One are quick to teach and fun with four.",
        ),
    ),
    "home": (
        (
            "How do I bleed a radiator?",
            "What's the best way to fix a dripping tap?",
            "Can I paint over wallpaper or should I strip it first?",
            "How do I get limescale off the shower head?",
            "Why does the bathroom fan make a rattling noise?",
        ),
        (
            "Turn the heating off, open the bleed valve with a key, close it when water appears.",
            "A worn washer is the usual culprit; turn the water off before taking the tap apart.",
            "Stripping first gives a better finish, though lining paper can hide small flaws.",
            "Soak it overnight in white vinegar and scrub it with an old toothbrush.",
            "A loose cover or dust on the blades often causes the rattle.",
        ),
    ),
    "work": (
        (
            "How can I write a shorter status update for my team?",
            "Any tips for running a better retrospective?",
            "How should I prepare for a salary negotiation?",
            "What's a polite way to decline a meeting?",
            "I keep getting distracted in the afternoon, any ideas?",
        ),
        (
            "Lead with what changed, what is blocked and what you need from others.",
            "Pick one theme per retro and end with a single concrete action.",
            "Gather market figures and list what you delivered this year.",
            "Thank them, say you can't make it, and offer to read the notes.",
            "Short breaks every hour and a walk after lunch help many people.",
        ),
    ),
    "music": (
        (
            "What's an easy song to learn on the ukulele?",
            "How do I stop my guitar strings from buzzing?",
            "Can you suggest some jazz albums for a beginner?",
            "Is it worth learning to read sheet music as an adult?",
        ),
        (
            "Songs with three or four chords, like many folk tunes, are a good start.",
            "Buzzing often comes from low action or pressing too far from the fret.",
            "Kind of Blue and Time Out are friendly starting points.",
            "Reading music opens up a lot of material and is quicker to learn than people expect.",
        ),
    ),
}

ACKS = (
    "Got it, I'll keep that in mind.",
    "Noted. Anything else you'd like me to remember?",
    "Thanks, that's saved for later in our conversation.",
    "Understood.",
    "Okay, noted down.",
    "Great, I'll remember that if you need it again.",
)

# --------------------------------------------------------------------------------------
# Fact kinds: how a fact is stated, how it is asked for later, and what shares its words
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FactKind:
    """One kind of fact: ``slots(rng)`` draws the details; ``statements`` say the fact
    (early on), ``questions`` ask it back (last), ``distractors`` share the question's words
    without the fact. Placeholders in ``{}`` come from the slots; a slot whose value is a
    tuple is a list of synonyms, one drawn per use. ``anchor`` names the slot that tells two
    facts of this kind apart (the city of a hotel), None when a chat holds only one."""

    name: str
    slots: Callable[[random.Random], dict[str, Any]]
    statements: tuple[str, ...]
    questions: tuple[str, ...]
    distractors: tuple[str, ...]
    anchor: str | None = None


def _code(rng: random.Random) -> str:
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    return f"{rng.choice(letters)}{rng.choice(letters)}-{rng.randint(1000, 9999)}"


def _hotel(rng: random.Random) -> dict[str, Any]:
    return {
        "city": rng.choice(CITIES),
        "value": _code(rng),
        "ref": ("reservation number", "booking reference", "confirmation code", "booking number"),
        "lodging": ("hotel", "accommodation", "room", "lodging"),
    }


def _flight(rng: random.Random) -> dict[str, Any]:
    return {
        "city": rng.choice(CITIES),
        "value": f"{rng.choice(AIRLINES)} {rng.randint(100, 2999)}",
        "time": f"{rng.randint(6, 21):02d}:{rng.choice(('05', '20', '35', '50'))}",
        "day": rng.choice(WEEKDAYS),
        "trip": ("trip", "journey", "flight", "plane"),
    }


RELATIONS: dict[str, tuple[str, ...]] = {
    "sister": ("sister", "sibling"),
    "manager": ("boss", "manager", "team lead"),
    "landlord": ("landlord", "property manager", "property owner"),
    "neighbour": ("neighbour", "next-door neighbour"),
    "dentist": ("dentist", "family dentist"),
    "accountant": ("accountant", "tax adviser"),
    "piano teacher": ("piano teacher", "music teacher"),
}


def _person(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(sorted(RELATIONS))
    return {
        "relation": relation,
        "value": f"{rng.choice(FIRST_NAMES)} {rng.choice(SURNAMES)}",
        "who": RELATIONS[relation],
    }


PROJECTS: dict[str, tuple[str, ...]] = {
    "kitchen renovation": ("kitchen remodel", "kitchen refit", "kitchen renovation"),
    "wedding": ("wedding", "big day"),
    "summer holiday": ("summer vacation", "summer trip", "holiday"),
    "new laptop": ("laptop", "new computer"),
    "garden redesign": ("garden makeover", "garden project"),
    "car": ("car", "new car", "vehicle"),
}


def _budget(rng: random.Random) -> dict[str, Any]:
    project = rng.choice(sorted(PROJECTS))
    return {
        "project": project,
        "value": f"${rng.randint(12, 480) * 50:,}",
        "what": PROJECTS[project],
        "money": ("budget", "spending limit", "cap"),
    }


def _address(rng: random.Random) -> dict[str, Any]:
    return {
        "value": f"{rng.randint(2, 180)} {rng.choice(STREETS)}",
        "flat": rng.randint(1, 24),
        "town": rng.choice(TOWNS),
        "send": ("packages", "parcels", "deliveries", "orders"),
        "ship": ("shipped", "sent", "delivered"),
    }


PLACES: dict[str, tuple[str, ...]] = {
    "cabin": ("cabin", "lake house"),
    "office building": ("office", "building at work"),
    "storage unit": ("storage unit", "storage place"),
    "bike locker": ("bike locker", "locker for my bike"),
    "garage": ("garage", "garage door"),
}


def _door(rng: random.Random) -> dict[str, Any]:
    place = rng.choice(sorted(PLACES))
    return {
        "place": place,
        "value": "".join(str(rng.randint(0, 9)) for _ in range(rng.choice((4, 5, 6)))),
        "where": PLACES[place],
        "pin": ("PIN", "code", "combination", "number to get in"),
    }


VISITS: dict[str, tuple[str, ...]] = {
    "dermatologist": ("skin doctor", "dermatologist"),
    "vet": ("vet", "animal clinic"),
    "physio": ("physiotherapist", "physio"),
    "mechanic": ("car service", "car garage"),
    "optician": ("eye test", "optician"),
}


def _appointment(rng: random.Random) -> dict[str, Any]:
    visit = rng.choice(sorted(VISITS))
    return {
        "visit": visit,
        "value": f"{rng.choice(WEEKDAYS)} {rng.randint(2, 28)} {rng.choice(MONTHS)}",
        "time": f"{rng.randint(8, 17)}:{rng.choice(('00', '15', '30', '45'))}",
        "which": VISITS[visit],
        "when": ("when", "what day", "which date"),
    }


PETS: dict[str, tuple[str, ...]] = {
    "beagle": ("dog", "puppy"),
    "labrador": ("dog", "pup"),
    "tabby kitten": ("cat", "kitten"),
    "Siamese": ("cat", "new cat"),
    "cockatiel": ("bird", "parrot"),
    "rabbit": ("bunny", "rabbit"),
}


def _pet(rng: random.Random) -> dict[str, Any]:
    breed = rng.choice(sorted(PETS))
    return {
        "breed": breed,
        "value": rng.choice(PET_NAMES),
        "animal": PETS[breed],
        "named": ("called", "named"),
    }


ITEMS: dict[str, tuple[str, ...]] = {
    "standing desk": ("desk", "standing desk"),
    "espresso machine": ("coffee machine", "espresso maker"),
    "running shoes": ("trainers", "running shoes"),
    "noise-cancelling headphones": ("headphones", "headset"),
    "air fryer": ("air fryer", "fryer"),
}


def _order(rng: random.Random) -> dict[str, Any]:
    item = rng.choice(sorted(ITEMS))
    return {
        "item": item,
        "store": rng.choice(("Northwind", "Brightmart", "Kestrel Home", "Parcelo", "Alder & Co")),
        "value": f"{rng.randint(100, 999)}-{rng.randint(1000000, 9999999)}",
        "thing": ITEMS[item],
        "ref": ("order number", "order ID", "purchase reference"),
    }


KINDS: tuple[FactKind, ...] = (
    FactKind(
        "hotel code",
        _hotel,
        (
            "I booked the {city} hotel, reservation {value}.",
            "Finally sorted a room in {city} for the conference. The confirmation code is {value}.",
            "The hotel in {city} emailed me: booking ref {value}. Can you keep that?",
        ),
        (
            "What's the {ref} for my {lodging} in {city}?",
            "I'm about to check in in {city} - which {ref} did I give you for the {lodging}?",
            "Remind me of the {ref} for where I'm staying in {city}?",
        ),
        (
            "Are there good {cuisine} places near the hotel in {city}?",
            "How early can you usually check in at a hotel?",
            "Do I need a reservation for the big museum in {city}?",
            "What's the number for a reliable taxi company in {city}?",
            "Is it cheaper to stay in {city} or {other} in spring?",
        ),
        anchor="city",
    ),
    FactKind(
        "flight number",
        _flight,
        (
            "My flight to {city} is {value}, leaving {day} at {time}.",
            "Booked the {city} flight: {value}, departs {time} on {day}.",
            "I'm flying out to {city} on {value} ({day}, {time}).",
        ),
        (
            "Which flight am I on for the {city} {trip}?",
            "What was the flight number for {city} again?",
            "When I land in {city}... hang on, what's the number of my {trip} there?",
        ),
        (
            "How long is the flight from here to {city} usually?",
            "What's the best way from the airport into {city}?",
            "Can I take a power bank on a flight?",
            "Are flights to {other} cheaper midweek?",
        ),
        anchor="city",
    ),
    FactKind(
        "person's name",
        _person,
        (
            "My {relation}'s name is {value}, by the way.",
            "{value} is my {relation}; you'll hear that name a lot.",
            "For context, my {relation} is called {value}.",
        ),
        (
            "What did I say my {who} is called?",
            "I'm writing an email to my {who} - what's their name again?",
            "Remind me who my {who} is?",
        ),
        (
            "How do I ask my {relation} for a day off politely?",
            "What's a good birthday present for a {relation}?",
            "My {relation} keeps calling me at dinner time, how do I handle it?",
        ),
        anchor="who",
    ),
    FactKind(
        "budget amount",
        _budget,
        (
            "The most I can spend on the {project} is {value}.",
            "For the {project}, I've set aside {value} in total.",
            "We agreed on a budget of {value} for the {project}.",
        ),
        (
            "What's the {money} I said I had for the {what}?",
            "How much money did I say I had for the {what}?",
            "Remind me of my {money} for the {what}?",
            "How much did I say I could put towards the {what}?",
        ),
        (
            "How do people usually budget for a {project}?",
            "What's a realistic timeline for a {project}?",
            "Should I pay for the {project} with a credit card or savings?",
        ),
        anchor="what",
    ),
    FactKind(
        "delivery address",
        _address,
        (
            "Send any parcels to {value}, flat {flat}, {town}.",
            "My delivery address is {value}, flat {flat}, {town}.",
            "We moved! New address: {value}, flat {flat}, {town}.",
        ),
        (
            "Where should the {send} be {ship} again?",
            "What address did I give you for {send}?",
            "I'm filling in a form: where do my {send} get {ship} to?",
        ),
        (
            "Can you track the parcel with ID {tracking}?",
            "How do I change the delivery address on an order that's already shipped?",
            "What's the postcode format in {town}?",
        ),
    ),
    FactKind(
        "door code",
        _door,
        (
            "The keypad code for the {place} is {value}.",
            "If you need it later: {place} code {value}.",
            "They changed the lock at the {place}; it's {value} now.",
        ),
        (
            "How do I get into the {where} - what's the {pin}?",
            "What's the {pin} for the {where}?",
            "I'm standing outside the {where}, which {pin} was it?",
        ),
        (
            "How often should I change the code on a keypad lock?",
            "Any tips for keeping a {place} tidy?",
            "Is a smart lock worth it for a {place}?",
        ),
        anchor="where",
    ),
    FactKind(
        "appointment date",
        _appointment,
        (
            "My {visit} appointment is on {value} at {time}.",
            "Booked the {visit} for {value}, {time}.",
            "The {visit} can see me {value} at {time}.",
        ),
        (
            "{when} is my {which} appointment?",
            "Remind me {when} I'm seeing the {which}?",
            "I forgot {when} the {which} booking is, can you tell me?",
        ),
        (
            "What should I bring to a {visit} appointment?",
            "Can you check my calendar for next {weekday}?",
            "How much does a {visit} visit usually cost?",
        ),
        anchor="which",
    ),
    FactKind(
        "pet's name",
        _pet,
        (
            "We adopted a {breed} last week, we named it {value}.",
            "Meet {value}, our new {breed}!",
            "The {breed} we got from the shelter is called {value}.",
        ),
        (
            "What's the name of our new {animal}?",
            "What did we call the {animal} again?",
            "Remind me what our {animal} is {named}?",
        ),
        (
            "How often should a young {breed} be fed?",
            "What's a good name for a {animal}?",
            "Is it normal for a {animal} to sleep most of the day?",
        ),
        anchor="animal",
    ),
    FactKind(
        "order number",
        _order,
        (
            "I ordered the {item} from {store}, order #{value}.",
            "The {item} is on its way from {store}: order {value}.",
            "{store} confirmed my {item} order, number {value}.",
        ),
        (
            "What's the {ref} for the {thing} I bought?",
            "I need to return the {thing} - which {ref} was it?",
            "Can you give me the {ref} for my {thing}?",
        ),
        (
            "How long does {store} usually take to ship?",
            "Is a {item} worth the money?",
            "What's the return policy for most online shops?",
        ),
        anchor="thing",
    ),
)


def _unlike(kind: FactKind, slots: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Slots for another fact of ``kind`` that the question cannot be about (its anchor
    shares no word with the asked fact's)."""
    assert kind.anchor is not None

    def words(value: Any) -> set[str]:
        return set(value) if isinstance(value, tuple) else {value}

    while True:
        other = kind.slots(rng)
        if not words(other[kind.anchor]) & words(slots[kind.anchor]):
            return other


def _fill(template: str, slots: dict[str, Any], rng: random.Random) -> str:
    """``template`` with each placeholder from ``slots`` (a synonym drawn per use)."""

    def pick(match: re.Match[str]) -> str:
        value = slots[match.group(1)]
        return str(rng.choice(value) if isinstance(value, tuple) else value)

    text = re.sub(r"\{(\w+)\}", pick, template)
    return text[0].upper() + text[1:]


# --------------------------------------------------------------------------------------
# Turns
# --------------------------------------------------------------------------------------


class Chat:
    """Builds one conversation as OpenAI-shaped dicts."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.messages: list[Message] = [{"role": "system", "content": SYSTEM_PROMPT}]
        self.calls = 0

    def user(self, text: str) -> Message:
        message = {"role": "user", "content": text}
        self.messages.append(message)
        return message

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def tools(self, calls: list[tuple[str, dict[str, Any], Any]]) -> None:
        """One assistant message calling every tool in ``calls``, then their results."""
        ids = []
        for _ in calls:
            self.calls += 1
            ids.append(f"call_{self.calls:04d}")
        self.messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for call_id, (name, args, _) in zip(ids, calls, strict=True)
                ],
            }
        )
        for call_id, (_, _, result) in zip(ids, calls, strict=True):
            self.messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}
            )

    # Turn kinds --------------------------------------------------------------------

    def small_talk(self, topic: str | None = None) -> None:
        rng = self.rng
        asks, says = TOPICS[topic or rng.choice(sorted(TOPICS))]
        self.user(rng.choice(asks))
        self.answer(" ".join(rng.sample(says, k=min(len(says), rng.randint(2, 4)))))

    def weather(self, city: str | None = None, text: str | None = None) -> None:
        rng = self.rng
        city = city or rng.choice(CITIES)
        days = rng.randint(3, 6)
        self.user(text or rng.choice(WEATHER_ASKS).format(city=city))
        first_day = rng.randrange(7)
        highs = [rng.randint(8, 31) for _ in range(days)]
        forecast = [
            {
                "day": WEEKDAYS[(first_day + k) % 7],
                "high_c": high,
                "low_c": high - rng.randint(3, 12),
                "conditions": rng.choice(CONDITIONS),
                "precipitation_mm": round(rng.random() * 9, 1),
                "wind_kph": rng.randint(3, 40),
            }
            for k, high in enumerate(highs)
        ]
        self.tools(
            [("get_weather", {"city": city, "days": days}, {"city": city, "forecast": forecast})]
        )
        first = forecast[0]
        self.answer(
            f"In {city} it starts {first['conditions']} with a high of {first['high_c']}°C; "
            f"later in the week expect {forecast[-1]['conditions']}."
        )

    def search(self, text: str | None = None, query: str | None = None) -> None:
        rng = self.rng
        topic = rng.choice(sorted(TOPICS))
        asks, says = TOPICS[topic]
        text = text or rng.choice(asks)
        query = query or " ".join(re.findall(r"\w+", text.lower())[:8])
        self.user(text)
        results = [
            {
                "title": f"{rng.choice(says)[:48].rstrip()}...",
                "url": f"https://www.{rng.choice(SITES)}/{topic}/{rng.randint(1000, 99999)}",
                "snippet": " ".join(rng.sample(says, k=2)),
            }
            for _ in range(rng.randint(2, 4))
        ]
        self.tools([("web_search", {"query": query, "max_results": len(results)}, results)])
        self.answer("From what I found: " + " ".join(rng.sample(says, k=2)))

    def restaurants(self, city: str | None = None, text: str | None = None) -> None:
        rng = self.rng
        city = city or rng.choice(CITIES)
        cuisine = rng.choice(CUISINES)
        self.user(text or f"Can you find a {cuisine} restaurant in {city} for Saturday night?")
        places = [
            {
                "name": f"{rng.choice(SURNAMES)}'s {rng.choice(PLACE_NAMES)}",
                "rating": round(3.5 + rng.random() * 1.5, 1),
                "price": rng.choice(("$", "$$", "$$$")),
                "distance_km": round(rng.random() * 4, 1),
                "open_until": f"{rng.randint(21, 23)}:00",
            }
            for _ in range(rng.randint(3, 5))
        ]
        self.tools([("search_restaurants", {"city": city, "cuisine": cuisine}, places)])
        self.answer(f"{places[0]['name']} has a {places[0]['rating']} rating and is open late.")

    def currency(self) -> None:
        rng = self.rng
        source, target = rng.sample(CURRENCIES, k=2)
        amount = rng.randint(2, 400) * 5
        rate = round(0.5 + rng.random() * 1.5, 4)
        self.user(f"How much is {amount} {source} in {target}?")
        self.tools(
            [
                (
                    "convert_currency",
                    {"amount": amount, "from": source, "to": target},
                    {"amount": round(amount * rate, 2), "rate": rate, "as_of": "today"},
                )
            ]
        )
        self.answer(f"{amount} {source} is about {amount * rate:,.2f} {target} at today's rate.")

    def parcel(self) -> None:
        rng = self.rng
        tracking = f"{rng.choice(CARRIERS).split()[0].upper()[:3]}{rng.randint(10**9, 10**10 - 1)}"
        self.user(rng.choice(PARCEL_ASKS).format(tracking=tracking))
        events = [
            {"status": status, "location": rng.choice(TOWNS + CITIES[:10])}
            for status in rng.sample(
                [
                    "label created",
                    "picked up",
                    "in transit",
                    "at sorting centre",
                    "out for delivery",
                ],
                k=rng.randint(2, 4),
            )
        ]
        self.tools([("track_parcel", {"tracking_id": tracking}, {"events": events})])
        self.answer(f"The latest status is '{events[-1]['status']}' in {events[-1]['location']}.")

    def calendar(self, text: str | None = None) -> None:
        rng = self.rng
        day = rng.choice(WEEKDAYS)
        self.user(text or f"What's on my calendar for {day}?")
        events = [
            {
                "time": f"{rng.randint(8, 18)}:{rng.choice(('00', '30'))}",
                "title": rng.choice(EVENTS),
            }
            for _ in range(rng.randint(1, 4))
        ]
        self.tools([("calendar_events", {"day": day}, events)])
        self.answer(
            f"You have {len(events)} thing(s) on {day}, starting with {events[0]['title']}."
        )

    def two_tools(self) -> None:
        """One question answered by two parallel tool calls."""
        rng = self.rng
        first, second = rng.sample(CITIES, k=2)
        self.user(f"Compare the weather in {first} and {second} this weekend.")
        self.tools(
            [
                (
                    "get_weather",
                    {"city": city, "days": 2},
                    {
                        "city": city,
                        "forecast": [
                            {
                                "day": day,
                                "high_c": rng.randint(8, 30),
                                "conditions": rng.choice(CONDITIONS),
                            }
                            for day in ("Saturday", "Sunday")
                        ],
                    },
                )
                for city in (first, second)
            ]
        )
        self.answer(f"{first} looks a little warmer than {second} on Saturday.")

    def calculator(self) -> None:
        rng = self.rng
        a, b = rng.randint(12, 999), rng.randint(2, 99)
        op = rng.choice(("*", "+", "/"))
        self.user(rng.choice(MATH_ASKS).format(a=a, b=b, op=op))
        value = a * b if op == "*" else a + b if op == "+" else round(a / b, 3)
        self.tools([("calculator", {"expression": f"{a} {op} {b}"}, {"result": value})])
        self.answer(f"That comes to {value}.")

    def distractor(self, text: str) -> None:
        """A turn that shares the question's words: answered plainly or by a search."""
        rng = self.rng
        if rng.random() < 0.5:
            self.search(text=text)
        else:
            self.user(text)
            _, says = TOPICS[rng.choice(sorted(TOPICS))]
            self.answer(
                rng.choice(("Good question. ", "Generally, ", "It depends, but "))
                + rng.choice(says)
            )


WEATHER_ASKS = (
    "What's the weather in {city} this week?",
    "Will I need an umbrella in {city}?",
    "How warm is it going to be in {city} over the next few days?",
)
PARCEL_ASKS = (
    "Where is my parcel {tracking}?",
    "Can you check the tracking for {tracking}?",
    "Has {tracking} been delivered yet?",
)
MATH_ASKS = (
    "What's {a} {op} {b}?",
    "Quick maths: {a} {op} {b}",
    "Can you work out {a} {op} {b} for me?",
)
EVENTS = (
    "Standup",
    "1:1 with the team",
    "Lunch with Marek",
    "Yoga class",
    "Quarterly planning",
    "School pickup",
    "Call with the bank",
    "Book club",
)
PLACE_NAMES = ("Kitchen", "Table", "Bistro", "Bar")
SITES = ("example-guides.com", "howto.example.org", "forum.example.net", "wiki.example.com")


# --------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------


@dataclass
class Scenario:
    """One generated chat and what its question asks for."""

    kind: str
    messages: list[Message]
    fact: str  # the user message that states the fact
    value: str  # what the question asks for (the code, name, amount, ...)
    question: str
    turns: int
    fact_turn: int


def scenario(seed: int) -> Scenario:
    rng = random.Random(seed)
    total = rng.randint(40, 120)  # turns before the question
    kind = rng.choice(KINDS)
    slots = kind.slots(rng)
    slots.setdefault("cuisine", rng.choice(CUISINES))
    slots.setdefault("other", rng.choice([c for c in CITIES if c != slots.get("city")]))
    slots.setdefault("tracking", f"UPS{rng.randint(10**9, 10**10 - 1)}")
    slots.setdefault("weekday", rng.choice(WEEKDAYS))

    # What happens at which turn: the fact early, other facts and distractors anywhere.
    plan: dict[int, tuple[str, Any]] = {}
    fact_turn = rng.randint(1, max(2, total // 3))
    plan[fact_turn] = ("fact", None)
    free = [t for t in range(total) if t not in plan]
    others = rng.sample([k for k in KINDS if k is not kind], k=rng.randint(1, 3))
    if kind.anchor is not None and rng.random() < 0.5:
        others.append(kind)  # the same kind about something else
    for other in others:
        turn = free.pop(rng.randrange(len(free)))
        plan[turn] = ("other fact", other)
    for text in rng.sample(kind.distractors, k=min(len(kind.distractors), rng.randint(3, 7))):
        turn = free.pop(rng.randrange(len(free)))
        plan[turn] = ("distractor", text)

    chat = Chat(rng)
    fact = ""
    fillers: list[Callable[[], None]] = [
        chat.small_talk,
        chat.small_talk,
        chat.small_talk,
        chat.weather,
        chat.search,
        chat.restaurants,
        chat.currency,
        chat.parcel,
        chat.calendar,
        chat.two_tools,
        chat.calculator,
    ]
    for turn in range(total):
        what, detail = plan.get(turn, ("filler", None))
        if what == "fact":
            fact = _fill(rng.choice(kind.statements), slots, rng)
            chat.user(fact)
            chat.answer(rng.choice(ACKS))
        elif what == "other fact":
            other_slots = _unlike(kind, slots, rng) if detail is kind else detail.slots(rng)
            chat.user(_fill(rng.choice(detail.statements), other_slots, rng))
            chat.answer(rng.choice(ACKS))
        elif what == "distractor":
            chat.distractor(_fill(detail, slots, rng))
        else:
            rng.choice(fillers)()
    question = _fill(rng.choice(kind.questions), slots, rng)
    chat.user(question)
    return Scenario(kind.name, chat.messages, fact, slots["value"], question, total, fact_turn)


# --------------------------------------------------------------------------------------
# Contenders
# --------------------------------------------------------------------------------------

_STOP = frozenset(
    _words(
        "the and for you your what that this with are was can did does how have has will just "
        "about from its our but not any all there they them then than also into out get got "
        "some like would could should which when where who been were again"
    )
)


class HashedBagOfWords(Embeddings):
    """A stand-in embedding model: words (three letters or more, a few stopwords left
    out) hashed into ``dimensions`` signed buckets. No model, no dependency, no meaning:
    it shows that ``SelectRelevant(embeddings=...)`` runs, not how a real model scores."""

    def __init__(self, dimensions: int = 512) -> None:
        self.dimensions = dimensions

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            if len(word) < 3 or word in _STOP:
                continue
            bucket = zlib.crc32(word.encode("utf-8"))
            vector[bucket % self.dimensions] += 1.0 if bucket & 0x80000000 else -1.0
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def to_langchain(messages: Sequence[Message]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=message["tool_call_id"]))
        else:
            calls = [
                {
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"]),
                    "id": call["id"],
                    "type": "tool_call",
                }
                for call in message.get("tool_calls", [])
            ]
            out.append(AIMessage(content, tool_calls=calls))
    return out


def ours(policy: Callable[[], list[Any]]) -> Callable[[int], Callable[[list[Any]], list[Any]]]:
    """A reducer with ``policy()`` (fresh steps per budget, so an embeddings step's vector
    memory starts empty) at ``max_tokens=budget``, the default estimate counting."""

    def build(budget: int) -> Callable[[list[Any]], list[Any]]:
        reducer = MessageReducer(config=ReducerConfig(max_tokens=budget, policy=policy()))
        return lambda messages: reducer.reduce(messages).surviving

    return build


def langchain_trim(budget: int) -> Callable[[list[Any]], list[Any]]:
    def run(messages: list[Any]) -> list[Any]:
        return list(
            trim_messages(
                messages,
                strategy="last",
                token_counter=count_tokens_approximately,
                max_tokens=budget,
                start_on="human",
                include_system=True,
            )
        )

    return run


class RecallAfterPruning:
    """(e): the chat grows turn by turn through a persistent reducer (``DropOldest``) whose
    ``StoreMemory`` keeps what it prunes in an ``InMemoryStore`` indexed with a
    deterministic word-hash embedding (``HashedWordEmbeddings``: no model, no network);
    then the model's input for the final question is the reducer's view with
    ``[Recall(store), DropOldest()]``. Growing (untimed, :meth:`prepare`) is what puts the
    early fact in the store long before it is asked for; the timed call is the view."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._history: list[Any] = []
        self._viewer: MessageReducer | None = None

    def prepare(self, messages: list[Any]) -> None:
        store = InMemoryStore(
            index={"dims": 256, "embed": HashedWordEmbeddings(256), "fields": ["text"]}
        )
        namespace = ("memories", "user")
        grower = MessageReducer(
            config=ReducerConfig(
                max_tokens=self.budget,
                policy=[DropOldest()],
                on_prune=[StoreMemory(store, namespace=namespace, index=["text"])],
            )
        )
        history: list[Any] = []
        for message in messages[:-1]:
            history = grower.reduce(history, [message]).surviving
        self._history = history
        self._viewer = MessageReducer(
            config=ReducerConfig(
                max_tokens=self.budget,
                policy=[Recall(store, namespace=namespace, k=3, max_tokens=200), DropOldest()],
            )
        )

    def __call__(self, messages: list[Any]) -> list[Any]:
        assert self._viewer is not None
        return self._viewer.view([*self._history, messages[-1]]).surviving


@dataclass(frozen=True)
class Contender:
    key: str
    label: str
    build: Callable[[int], Callable[[list[Any]], list[Any]]]
    langchain: bool = False


CONTENDERS = (
    Contender(
        "a", "(a) ours: SelectRelevant + DropOldest", ours(lambda: [SelectRelevant(), DropOldest()])
    ),
    Contender("b", "(b) ours: DropOldest (recency only)", ours(lambda: [DropOldest()])),
    Contender("c", "(c) LangChain trim_messages, last", langchain_trim, langchain=True),
    Contender(
        "d",
        "(d) ours: SelectRelevant(embeddings=hashed BoW)",
        ours(lambda: [SelectRelevant(embeddings=HashedBagOfWords()), DropOldest()]),
    ),
    Contender("e", "(e) ours: Recall from StoreMemory (pruned)", RecallAfterPruning),
)
KEYS = "abcde"


@dataclass
class Tally:
    kept: int = 0
    tokens: list[int] = field(default_factory=list)
    own_tokens: list[int] = field(default_factory=list)  # trim_messages' own counter
    over: int = 0
    invalid: int = 0
    seconds: float = 0.0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [kept, total]
    by_overlap: dict[bool, list[int]] = field(default_factory=dict)  # shares a term? -> same


def content(message: Any) -> Any:
    return message["content"] if isinstance(message, dict) else message.content


def run(budget: int, scenarios: list[Scenario]) -> dict[str, Tally]:
    audit = MessageReducer(config=ReducerConfig(max_tokens=budget))
    converted = [to_langchain(s.messages) for s in scenarios]
    tallies = {c.key: Tally() for c in CONTENDERS}
    reducers = {c.key: c.build(budget) for c in CONTENDERS}
    for contender in CONTENDERS:  # warm up (lazy imports, first-call set-up), not timed
        warm = list(converted[0] if contender.langchain else scenarios[0].messages)
        if isinstance(reducers[contender.key], RecallAfterPruning):
            reducers[contender.key].prepare(warm)  # type: ignore[attr-defined]
        reducers[contender.key](warm)
    for index, item in enumerate(scenarios):
        # Contenders take turns on each scenario, so machine load hits them alike.
        for contender in CONTENDERS:
            tally = tallies[contender.key]
            source = converted[index] if contender.langchain else item.messages
            messages = list(source)
            reducer = reducers[contender.key]
            if isinstance(reducer, RecallAfterPruning):
                reducer.prepare(messages)  # the chat grows, pruning into the store: untimed
            start = time.process_time()
            kept = reducer(messages)
            tally.seconds += time.process_time() - start
            if isinstance(reducer, RecallAfterPruning):
                wanted = " ".join(item.fact.split())
                found = any(wanted in " ".join(str(content(m)).split()) for m in kept)
            else:
                found = any(content(m) == item.fact for m in kept)
            tally.kept += found
            counts = tally.by_kind.setdefault(item.kind, [0, 0])
            counts[0] += found
            counts[1] += 1
            shares = bool(set(terms(item.fact)) & set(terms(item.question)))
            counts = tally.by_overlap.setdefault(shares, [0, 0])
            counts[0] += found
            counts[1] += 1
            report = audit.validate(kept)
            tally.tokens.append(report.tokens_after)
            tally.over += any(p.kind == "over_budget" for p in report.problems)
            tally.invalid += any(
                p.kind in ("orphan_result", "dangling_call") for p in report.problems
            )
            if contender.langchain:
                tally.own_tokens.append(count_tokens_approximately(kept))
    return tallies


LANGMEM_K = 3


def langmem_figures(scenarios: list[Scenario]) -> dict[str, Any]:
    """(f) langmem's memory tools on the same chats, in their own venv (bench/_peers.py,
    bench/_langmem_worker.py); ``{"skipped": why}`` when the venv cannot be made."""
    import subprocess
    import tempfile
    from pathlib import Path

    from _peers import PeerSetupError, peer_python

    root = Path(__file__).resolve().parent.parent
    try:
        python = peer_python("langmem", ["langmem", f"agentstate-reducer @ {root.as_uri()}"])
    except PeerSetupError as exc:
        return {"skipped": str(exc).splitlines()[0]}
    chats = [{"messages": s.messages, "fact": s.fact, "question": s.question} for s in scenarios]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"k": LANGMEM_K, "chats": chats}, handle)
    try:
        proc = subprocess.run(
            [str(python), str(Path(__file__).with_name("_langmem_worker.py")), handle.name],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
    finally:
        Path(handle.name).unlink()
    if proc.returncode != 0:
        return {"skipped": f"worker failed: {proc.stderr.strip().splitlines()[-1:]}"}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    found = out["found"]
    by_kind: dict[str, list[int]] = {}
    for item, hit in zip(scenarios, found, strict=True):
        counts = by_kind.setdefault(item.kind, [0, 0])
        counts[0] += hit
        counts[1] += 1
    return {
        "recalled_pct": round(100 * sum(found) / len(found), 1),
        "ms_per_search": round(1000 * statistics.mean(out["seconds"]), 3),
        "by_kind": by_kind,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 scenarios instead of 200")
    parser.add_argument("--scenarios", type=int, default=None)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    args = parser.parse_args()
    count = args.scenarios or (50 if args.quick else 200)

    scenarios = [scenario(args.seed + n) for n in range(count)]
    sizer = MessageReducer()
    before = [sum(sizer.count_tokens(m) for m in s.messages) for s in scenarios]
    turns = [s.turns for s in scenarios]
    print(
        f"{count} generated chats (seed {args.seed}): {statistics.mean(turns):.0f} turns on "
        f"average ({min(turns)}-{max(turns)}), "
        f"{statistics.mean(len(s.messages) for s in scenarios):.0f} messages, "
        f"{statistics.mean(before):,.0f} tokens ({min(before):,}-{max(before):,}); "
        f"the fact at turn {statistics.mean(s.fact_turn for s in scenarios):.1f} on average, "
        f"{len({s.kind for s in scenarios})} fact kinds"
    )
    example = scenarios[0]
    print(f"  e.g. fact:     {example.fact!r}\n       question: {example.question!r}")

    figures: dict[str, dict[str, Any]] = {}
    ratios: dict[str, float] = {}
    targets: dict[str, dict[str, Any]] = {}
    for budget in args.budgets:
        tallies = run(budget, scenarios)
        print(f"\nbudget {budget:,} tokens (our default estimate), {count} scenarios")
        print(
            f"  {'contender':<48} {'fact kept':>9} {'mean tok':>9} {'max tok':>8} "
            f"{'over':>5} {'invalid':>8} {'ms/reduce':>10}"
        )
        for contender in CONTENDERS:
            tally = tallies[contender.key]
            print(
                f"  {contender.label:<48} {100 * tally.kept / count:>8.1f}% "
                f"{statistics.mean(tally.tokens):>9,.0f} {max(tally.tokens):>8,} "
                f"{tally.over:>5} {tally.invalid:>8} {1000 * tally.seconds / count:>10.2f}"
            )
        trim = tallies["c"]
        print(
            f"  (c) by its own counter (count_tokens_approximately): mean "
            f"{statistics.mean(trim.own_tokens):,.0f}, max {max(trim.own_tokens):,} tokens"
        )
        over = [t.over for t in tallies.values()] + [max(trim.own_tokens) > budget]
        invalid = sum(t.invalid for t in tallies.values())
        print(
            f"  within budget: {'every list' if not any(over) else 'NOT every list'} "
            f"(ours by our estimate, trim_messages by both counters); provider-valid: "
            f"{'every list' if not invalid else f'{invalid} lists with an orphan or dangling call'}"
        )
        print("  fact kept by kind:  " + "  ".join(f"{k:>10}" for k in KEYS))
        for kind in KINDS:
            cells = []
            for key in KEYS:
                hits, seen = tallies[key].by_kind.get(kind.name, [0, 0])
                cells.append(f"{hits}/{seen}" if seen else "-")
            print(f"    {kind.name:<17} " + "  ".join(f"{c:>10}" for c in cells))

        cells = {
            shares: ", ".join(
                "({}) {}/{}".format(key, *tallies[key].by_overlap.get(shares, [0, 0]))
                for key in "ade"
            )
            for shares in (True, False)
        }
        print(
            f"  fact kept when the question shares a term with the fact (stemmed, no "
            f"stopwords): {cells[True]}; when it shares none: {cells[False]}"
        )
        a, b, c = (tallies[key] for key in "abc")
        sound = a.over == 0 and a.invalid == 0
        label_b = f"{budget} tokens: fact lost, recency only / SelectRelevant"
        label_c = f"{budget} tokens: fact lost, trim_messages / SelectRelevant"
        ratios[label_b] = round((count - b.kept) / max(count - a.kept, 1), 2)
        ratios[label_c] = round((count - c.kept) / max(count - a.kept, 1), 2)
        e = tallies["e"]
        label_e = f"{budget} tokens: fact lost, recency only / Recall"
        ratios[label_e] = round((count - b.kept) / max(count - e.kept, 1), 2)
        targets[label_b] = {"target": 1.0, "met": a.kept > b.kept and sound}
        figures[str(budget)] = {
            contender.key: {
                "label": contender.label,
                "fact_kept_pct": round(100 * tallies[contender.key].kept / count, 1),
                "mean_tokens": round(statistics.mean(tallies[contender.key].tokens)),
                "max_tokens": max(tallies[contender.key].tokens),
                "over_budget": tallies[contender.key].over,
                "invalid": tallies[contender.key].invalid,
                "ms_per_reduce": round(1000 * tallies[contender.key].seconds / count, 3),
            }
            for contender in CONTENDERS
        }
    # langmem runs in a venv of its own, made on first use (which needs the package index):
    # not in a quick run, which the tests make.
    langmem = {"skipped": "not in a --quick run"} if args.quick else langmem_figures(scenarios)
    if "skipped" in langmem:
        print(f"\n(f) langmem's memory tools: skipped ({langmem['skipped']})")
    else:
        print(
            f"\n(f) langmem {LANGMEM_K}-result search_memory after manage_memory(create) of "
            f"every user message (its tools, as a scripted agent calls them; the same "
            f"HashedWordEmbeddings): the fact among the results in {langmem['recalled_pct']}% "
            f"of {count} chats, {langmem['ms_per_search']:.2f} ms per search (whatever the "
            "budget: it keeps no list)"
        )
    result = {
        "bench": "relevance",
        "langmem": langmem,
        "ratios": ratios,
        "targets": targets,
        "scenarios": count,
        "seed": args.seed,
        "budgets": figures,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
