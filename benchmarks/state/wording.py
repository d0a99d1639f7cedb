"""The words of the world-state stories: names, and many ways a narrator or a player says each
change of state, or mentions a thing without changing anything.

Invariants (``tests/benchmarks/test_state_generator.py`` checks them):

- Every template of a change kind states that change and no other; a distractor
  (``DISTRACT``), a refusal (``REFUSE``) or a piece of scenery states none, however much it
  looks like one (a memory, a denial, another person's act, speech in quotes, a plan).
- The wordings are written as narrators and players write, not to fit any reader: some
  are the plain sentences a pattern knows ("You pick up the lantern."), most are not
  ("Your fingers close around the lantern.").
- Names: no two people, places or items of one pool share a word a short form could
  take (an item's short form is its last word); some are in scripts other than Latin
  (Cyrillic, Greek, Japanese), two of them Japanese names one character apart.

Slots: ``{place}`` ("the old mill", "Gullreach"), ``{item}`` ("the brass lantern" or
"the lantern"), ``{an_item}`` ("a brass lantern"), ``{bare}`` ("brass lantern" or "lantern"),
``{person}``, ``{other}`` (someone else, perhaps far away), ``{clause}`` (scenery), and a
capitalised ``{Place}``/``{Item}`` where a sentence opens with one.
"""

from __future__ import annotations

# (full name, short forms): the narration uses both; the ground truth knows one thing.
PEOPLE = (
    ("Mara",),
    ("Tobin",),
    ("Captain Rhys", "Rhys"),
    ("Ida Venn", "Ida"),
    ("Brother Aldo", "Aldo"),
    ("Sella",),
    ("Hob",),
    ("Dorrit",),
    ("Kell",),
    ("Wenna",),
)
PEOPLE_OTHER_SCRIPTS = (("Мирон",), ("Злата",), ("Δάφνη",), ("明子",), ("明美",))
PLACES = (
    ("the old mill", "the mill"),
    ("the Salt Market", "the market"),
    ("Gullreach",),
    ("the chapel",),
    ("the ferry landing", "the landing"),
    ("the watchtower", "the tower"),
    ("the orchard",),
    ("Varn",),
    ("the smithy", "the forge"),
    ("the Drowned Bell", "the inn"),
)
PLACES_OTHER_SCRIPTS = (("Старый Брод",), ("白鷺亭",), ("Άργος",))
ITEMS = (
    ("brass", "lantern"),
    ("iron", "key"),
    ("hemp", "rope"),
    ("silver", "locket"),
    ("oak", "staff"),
    ("leather", "map"),
    ("tin", "whistle"),
    ("bone", "knife"),
    ("clay", "jar"),
    ("wool", "cloak"),
    ("glass", "vial"),
    ("copper", "compass"),
    ("signet", "ring"),
    ("wooden", "flute"),
)

OPENING = (
    "Rain sweeps in off the sea as you arrive at {place}.",
    "You wake in {place} with the taste of salt in your mouth.",
    "You walk into {place} at the end of a long journey.",
    "The story begins in {place}, where you have come looking for work.",
)
TITLES = ("The Salt Road", "Lanterns in the Fog", "The Ferryman's Debt", "A Winter in Varn")

# -- the narrator's sentences, by what they change ---------------------------------------------

MOVE = (
    "You walk into {place}.",
    "You reach {place} as the light changes.",
    "You find yourself in {place}.",
    "The path brings you out at {place}.",
    "You arrive at {place}, out of breath.",
    "You make your way to {place}.",
    "You step into {place} and shake the rain from your coat.",
    "By the time you reach {place}, your boots are soaked through.",
    "You head over to {place}.",
    "{Place} is crowded when you get there.",
    "You cross the square and go into {place}.",
    "You push open the door and enter {place}.",
    "You follow the lane down to {place}.",
    "Half an hour's walk brings you to {place}.",
    "You climb up to {place}.",
    "You reach {place} just as the light begins to fail.",
)
FOLLOW = (
    "{person} comes with you.",
    "{person} walks beside you the whole way.",
    "{person} follows close behind.",
    "{person} keeps pace at your side.",
)
ARRIVE = (
    "{person} arrives, shaking snow from a heavy cloak.",
    "{person} comes in from the rain.",
    "The door opens and {person} walks in.",
    "{person} is waiting for you by the fire.",
    "A moment later {person} joins you.",
    "{person} steps out of the shadows.",
    "You turn to find {person} standing behind you.",
    "{person} enters, looking tired.",
    "{person} appears at your side.",
    "{person} hurries over to meet you.",
    "{person} turns up soon after, breathless.",
)
LEAVE = (
    "{person} leaves without a word.",
    "{person} walks out into the night.",
    "{person} slips away while you are talking.",
    "{person} takes their leave.",
    "With a nod, {person} departs.",
    "{person} heads off toward the docks.",
    "You watch {person} go.",
    "{person} says goodbye and is gone.",
    "{person} leaves for the coast.",
)
DIE = (
    "{person} dies before the healer can reach them.",
    "{person} breathes their last.",
    "{person} is dead before the bell stops ringing.",
    "{person} falls and does not rise again.",
    "{person} lies still; there is no breath left in them.",
    "{person} has died of the wound.",
    "The fever takes {person} in the night.",
    "{person} dies in your arms.",
)
KILL = (
    "You kill {person}.",
    "Your blade finds {person}'s heart.",
    "You strike {person} down, and {person} moves no more.",
)
TAKE = (
    "You pick up {item}.",
    "You take {item}.",
    "Your fingers close around {item}.",
    "You tuck {item} into your belt.",
    "You pocket {item}.",
    "{Item} is yours now.",
    "You lift {item} from the shelf.",
    "You grab {item} before anyone else can.",
    "You slip {item} into your pack.",
    "You take {item} from the table and hang it at your hip.",
    "You help yourself to {item}.",
    "You scoop up {item} and keep walking.",
    "You collect {item}.",
)
RECEIVE = (
    "{person} hands you {item}.",
    "{person} presses {item} into your hands.",
    "{person} gives you {item}.",
    "{person} tosses you {item}, and you catch it.",
)
INTRO = (
    "{An_item} hangs on a hook by the door.",
    "On the table lies {an_item}.",
    "There is {an_item} half-buried in the straw.",
    "Someone has left {an_item} on the bench.",
)
DROP = (
    "You drop {item}.",
    "You set {item} down on the bench.",
    "You leave {item} behind.",
    "You put down {item}.",
    "{Item} slips from your hand and rolls away into the dark.",
    "You let {item} fall into the grass.",
    "You toss {item} aside.",
    "You lay {item} on the ground.",
    "You discard {item}.",
    "You hang {item} back on its hook.",
)
GIVE = (
    "You give {item} to {person}.",
    "You hand {item} to {person}.",
    "You hand {person} {item}.",
    "{person} takes {item} from you with a grateful nod.",
    "You pass {item} to {person}.",
    "{person} accepts {item} and tucks it away.",
    "You press {item} into {person}'s hands.",
    "You let {person} keep {item}.",
)
OTHER_TAKE = (  # someone else takes an item lying here
    "{person} picks up {item}.",
    "{person} pockets {item} when no one is looking.",
    "{person} takes {item} and turns it over.",
    "{person} helps themselves to {item}.",
)
SNATCH = (  # someone else takes an item from the player
    "{person} takes {item} from you.",
    "{person} snatches {item} out of your hands.",
    "{person} borrows {item} and does not give it back.",
    "You let {person} carry {item} for a while.",
)
# A moment is (day, part, tick): parts run dawn 0, morning 1, noon 2, afternoon 3,
# evening 4, night 5, midnight 6; a tick is "an hour later" within a part.
# Each time sentence: (template, days on, the part it names or None, whether ticks on).
TIME: tuple[tuple[str, int, int | None, bool], ...] = (
    ("The next morning, {clause}.", 1, 1, False),
    ("The following day, {clause}.", 1, 0, False),
    ("At dusk, {clause}.", 0, 4, False),
    ("By nightfall, {clause}.", 0, 5, False),
    ("Hours later, {clause}.", 0, None, True),
    ("An hour later, {clause}.", 0, None, True),
    ("Night falls, and {clause}.", 0, 5, False),
    ("Dawn comes grey and cold, and {clause}.", 1, 0, False),
    ("Evening comes on slowly; {clause}.", 0, 4, False),
    ("Days later, {clause}.", 2, 0, False),
    ("When morning comes, {clause}.", 1, 1, False),
    ("The sun sets, and {clause}.", 0, 4, False),
    ("At noon, {clause}.", 0, 2, False),
    ("Three days pass, and {clause}.", 3, 0, False),
    ("Late that night, {clause}.", 0, 6, False),
)
CLAUSES = (
    "the fog lifts from the river",
    "rain drums on the roof",
    "the streets fall quiet",
    "the wind turns cold",
    "smoke rises from the chimneys",
    "the bells ring over the town",
    "a thin snow drifts down",
    "the tide goes out",
)
# A do action the story refuses: the player tried, nothing changed.
REFUSE_MOVE = (
    "The way to {place} is flooded, and you turn back.",
    "A guard bars the road to {place}; you stay where you are.",
    "You set out for {place}, but the storm drives you back within the hour.",
    "The gate of {place} is locked, so you go no further.",
)
REFUSE_TAKE = (
    "{Item} is fixed fast to the wall, and it will not come free.",
    "{Item} is too hot to touch; you leave it where it is.",
    "The keeper shakes his head and keeps {item} behind the counter.",
    "{Item} crumbles to rust in your grip.",
)
# Mentions that change nothing. By what they mention; ``held``: an item the player carries.
DISTRACT = {
    "place": (
        "The road to {place} is long.",
        "{person} talks about {place}.",
        "From here you can see {place}.",
        '"Go to {place} and wait for me," {person} says.',
        '"You go to {place} tonight, and you tell no one," {person} says.',
        "You remember the summer you spent in {place}.",
        "You do not go into {place}.",
        "Someone in the crowd mentions {place}.",
        "A cart rattles past on its way to {place}.",
        "You think about going to {place}, but you stay.",
    ),
    "item": (
        "You remember the {bare} your father carried.",
        "You do not take {item}.",
        '"Take {item}," {person} says.',
        "{person} points at {item}.",
        "You look at {item} for a long moment.",
        "You could take {item}, but you leave it where it is.",
        '"You pick up {item} and you run," {person} whispers.',
        "You try to pick up {item}, but it is too heavy.",
        "You wonder who left {item} here.",
    ),
    "held": (
        "You almost drop {item}.",
        "You check that {item} is still in your pack.",
        "{person} asks whether you still have {item}.",
        "You would never give {item} to a stranger.",
        "{Item} feels heavier than it did this morning.",
    ),
    "person": (
        "You think of {other}, far away.",
        '"{other} never comes here any more," {person} says.',
        "{person} laughs at something {other} said once.",
        "They say {other} arrives tomorrow.",
        "They say {other} is dead, but you do not believe it.",
        '"{other} leaves for the coast at first light," {person} tells you.',
    ),
    "time": (
        '"We leave at dawn," {person} says.',
        "You remember the morning you left home.",
        "The bells here ring at noon every day.",
        '"Come back the next morning," {person} tells you.',
        "You think of the evening you first came this way.",
        "Tomorrow will be a long day.",
    ),
}
SCENERY = (
    "The fire crackles.",
    "Rain taps against the shutters.",
    "Nobody answers.",
    "A dog barks somewhere far off.",
    "The air smells of smoke and salt.",
    "Gulls wheel over the rooftops.",
    "It is very quiet.",
    "Somewhere a door bangs in the wind.",
    "Your breath smokes in the cold.",
)
# What follows a do action the narrator does not restate (it went as the player said).
AFTER_TAKE = ("It is heavier than it looks.", "It is old, but it will serve.")
AFTER_MOVE = ("It is colder here than outside.", "No one looks up as you come in.")

# -- the player's actions ------------------------------------------------------------------------

PLAYER = {
    "move.do": (
        "go to {place}",
        "walk to {place}",
        "head for {place}",
        "enter {place}",
        "make for {place}",
        "set off for {place}",
        "travel to {place}",
    ),
    "move.story": (
        "I set off for {place} without another word.",
        "I walk to {place}.",
        "I make my way toward {place}.",
        "I go to {place} before the others wake.",
    ),
    "move.say": (
        "Let's go to {place}.",
        "We should head for {place} before dark.",
        "I'm going to {place}. Come if you like.",
    ),
    "take.do": (
        "take {item}",
        "pick up {item}",
        "grab {item}",
        "get {bare}",
        "take {bare}",
        "pocket {item}",
        "pick {item} up",
    ),
    "take.story": (
        "I reach for {item}.",
        "I pick up {item} and turn it over in my hands.",
        "I take {item}.",
    ),
    "take.say": ("Is {item} for sale?", "May I have {item}?"),
    "receive.do": ("ask {person} for {item}",),
    "receive.say": ("{person}, could I borrow {item}?",),
    "drop.do": (
        "drop {item}",
        "put down {item}",
        "drop {bare}",
        "leave {item} here",
        "set {item} down",
    ),
    "drop.story": ("I set {item} on the floor and step back.", "I drop {item}."),
    "give.do": (
        "give {item} to {person}",
        "hand {item} to {person}",
        "give {person} {item}",
        "offer {item} to {person}",
        "give {bare} to {person}",
    ),
    "give.story": ("I hold out {item} to {person}.", "I give {item} to {person}."),
    "give.say": ("{person}, keep {item}. You'll need it more than I will.",),
    "kill.do": ("attack {person}", "draw steel on {person}"),
    "idle.do": (
        "look around",
        "wait",
        "listen at the door",
        "sit by the fire",
        "ask {person} about {place}",
        "search the room",
    ),
    "idle.story": ("I wait and watch the door.", "I sit down and catch my breath."),
    "idle.say": (
        "What is this place?",
        "Has anyone seen {other}?",
        "I'm tired.",
        "{person}, what do you know about {place}?",
    ),
}
