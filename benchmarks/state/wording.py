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

Three sets of wording (``Wording``), disjoint, with the same kinds and slots:

- ``TUNED``: the templates below, which every seed's stories are written in and the
  rules were tuned on (on the tune seed's stories).
- ``FRESH``: a second set, written all at once before any tuning on it, and now tuned on
  as a second tuning set for the rules; its held-out seeds' stories are still reported.
- ``UNSEEN`` (in ``wording_unseen.py``): a third set, written all at once before any tuning
  on ``FRESH``, by someone who had not read the rules, and never tuned on, so that stories
  in it measure the rules on phrasings they have not seen. Its stories' misses are not for
  reading to tune the rules: once tuned on, it is unseen no more.

Slots: ``{place}`` ("the old mill", "Gullreach"), ``{item}`` ("the brass lantern" or
"the lantern"), ``{an_item}`` ("a brass lantern"), ``{bare}`` ("brass lantern" or "lantern"),
``{person}``, ``{other}`` (someone else, perhaps far away), ``{clause}`` (scenery), and a
capitalised ``{Place}``/``{Item}`` where a sentence opens with one.
"""

from __future__ import annotations

from dataclasses import dataclass

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


# -- the sets of wording ------------------------------------------------------------------------


@dataclass(frozen=True)
class Wording:
    """One set of templates for everything a story writes but the names, by kind."""

    opening: tuple[str, ...]
    move: tuple[str, ...]
    follow: tuple[str, ...]
    arrive: tuple[str, ...]
    leave: tuple[str, ...]
    die: tuple[str, ...]
    kill: tuple[str, ...]
    take: tuple[str, ...]
    receive: tuple[str, ...]
    intro: tuple[str, ...]
    drop: tuple[str, ...]
    give: tuple[str, ...]
    other_take: tuple[str, ...]
    snatch: tuple[str, ...]
    time: tuple[tuple[str, int, int | None, bool], ...]
    clauses: tuple[str, ...]
    refuse_move: tuple[str, ...]
    refuse_take: tuple[str, ...]
    distract: dict[str, tuple[str, ...]]
    scenery: tuple[str, ...]
    after_take: tuple[str, ...]
    after_move: tuple[str, ...]
    player: dict[str, tuple[str, ...]]

    def pools(self) -> dict[str, tuple[str, ...]]:
        """Every template, by the kind a story records it under ("move", "refuse.take",
        "distract.item", "player.take.do", ...; the time clauses as "clause")."""
        singles = {
            "opening": self.opening,
            "move": self.move,
            "follow": self.follow,
            "arrive": self.arrive,
            "leave": self.leave,
            "die": self.die,
            "kill": self.kill,
            "take": self.take,
            "receive": self.receive,
            "intro": self.intro,
            "drop": self.drop,
            "give": self.give,
            "other_take": self.other_take,
            "snatch": self.snatch,
            "time": tuple(template for template, _, _, _ in self.time),
            "clause": self.clauses,
            "refuse.move": self.refuse_move,
            "refuse.take": self.refuse_take,
            "scenery": self.scenery,
            "after.take": self.after_take,
            "after.move": self.after_move,
        }
        distract = {f"distract.{k}": v for k, v in self.distract.items()}
        player = {f"player.{k}": v for k, v in self.player.items()}
        return singles | distract | player


# The templates above: every seed's stories are written in them, and the rules were tuned
# on the tune seed's stories, so a held-out seed is new stories in known phrasings.
TUNED = Wording(
    opening=OPENING,
    move=MOVE,
    follow=FOLLOW,
    arrive=ARRIVE,
    leave=LEAVE,
    die=DIE,
    kill=KILL,
    take=TAKE,
    receive=RECEIVE,
    intro=INTRO,
    drop=DROP,
    give=GIVE,
    other_take=OTHER_TAKE,
    snatch=SNATCH,
    time=TIME,
    clauses=CLAUSES,
    refuse_move=REFUSE_MOVE,
    refuse_take=REFUSE_TAKE,
    distract=DISTRACT,
    scenery=SCENERY,
    after_take=AFTER_TAKE,
    after_move=AFTER_MOVE,
    player=PLAYER,
)

# Fresh wording: a second set, disjoint from the first, written at once for every kind
# before any rule was tuned on it. Its first figures (held-out seeds: location precision
# 0.43, inventory 0.44) measured the rules on phrasings they had not seen; since then the
# rules are tuned on its tune-seed stories too, and the unseen set
# (``wording_unseen.UNSEEN``, written before that tuning) took over its first role. Same
# invariants and slots as the tuned set.
FRESH = Wording(
    opening=(
        "Your story opens in {place}, on a morning thick with mist.",
        "It is your third day in {place}, and your coin is running low.",
        "The carter sets you down in {place} and drives off without looking back.",
        "You have taken a bed in {place} for as long as your money lasts.",
    ),
    move=(
        "Ducking under the low lintel, you enter {place}.",
        "Your steps carry you down into {place}.",
        "Soaked and muddy, you stumble at last into {place}.",
        "You cross the threshold of {place}.",
        "And so you come to {place}.",
        "{Place} is reached by the old coast road.",
    ),
    follow=(
        "{person} trails after you.",
        "Not wanting to be left behind, {person} tags along.",
        "{person} is at your heels all the way.",
        "You bring {person} along.",
        '"Wait for me," {person} calls, and hurries after you.',
    ),
    arrive=(
        "Heavy boots on the stair announce {person}, who ducks in out of the wind.",
        '"There you are," says {person}, pushing through the crowd to your side.',
        "Into the room strides {person}.",
        "You are joined by {person}.",
        "Without knocking, {person} lets themselves in.",
    ),
    leave=(
        "{person} is gone by the time you look up.",
        "Muttering an excuse, {person} hurries out.",
        '"Perhaps we will meet again," {person} says, and goes.',
        "The door swings shut behind {person}.",
        "{person} excuses themselves and steps outside.",
    ),
    die=(
        "{person} gasps once and goes still, and does not move again.",
        "{person} is killed by a falling beam.",
        "The arrow takes {person} in the throat; {person} is dead before reaching the floor.",
        "By the time you kneel beside {person}, it is over.",
        "Nobody can save {person}, who dies with a curse on their lips.",
    ),
    kill=(
        "Your sword runs {person} through, and {person} falls dead.",
        "It is over quickly: {person} lies dead at your feet.",
        "With one blow you end {person}'s life.",
        "{person} is slain by your hand.",
    ),
    take=(
        "Without a word, you slide {item} under your coat.",
        "{Item} belongs to you now.",
        "Reaching up, you unhook {item} and tuck it away.",
        "{Item} goes into your satchel.",
        '"Finders keepers," you mutter, closing your hand on {item}.',
        "{Item} is stowed away in your pack.",
    ),
    receive=(
        '"Take it," {person} says, and puts {item} in your hands.',
        "You are given {item} by {person}.",
        "{person} lets you have {item}.",
        "{Item} passes from {person}'s hands to yours.",
        "With a shrug, {person} parts with {item}, and it is yours.",
    ),
    intro=(
        "Propped against the wall is {an_item}.",
        "Among the clutter on the shelf you notice {an_item}.",
        "{An_item} sits forgotten in the corner.",
        "Half-hidden under a sack, {an_item} catches the light.",
    ),
    drop=(
        "Carefully, you lower {item} to the floor.",
        "{Item} clatters to the boards as you let go of it.",
        "You prop {item} against the wall and leave it there.",
        "By the hearth you lay down {item}.",
        "Setting {item} aside on a crate, you stretch your arms.",
    ),
    give=(
        "You slide {item} across the table to {person}, who puts it away.",
        '"Here," you say, holding {item} out until {person} takes it.',
        "{Item} goes to {person}, with your blessing.",
        "{person} is given {item} for safekeeping.",
        "You entrust {item} to {person}.",
    ),
    other_take=(
        "{person} stoops and gathers up {item}.",
        "Before you can stop them, {person} has {item} in hand.",
        "{Item} vanishes into {person}'s bag.",
        '"Mine, I think," says {person}, lifting {item}.',
    ),
    snatch=(
        "{person} plucks {item} from your grasp.",
        "Quick as a cat, {person} relieves you of {item}.",
        '"I\'ll look after that," {person} says, and takes {item} off you.',
        "{Item} is wrenched from your hands by {person}.",
    ),
    time=(
        ("Toward evening, {clause}.", 0, 4, False),
        ("A while later, {clause}.", 0, None, True),
        ("Some time passes, and {clause}.", 0, None, True),
        ("Midday finds you still there, and {clause}.", 0, 2, False),
        ("The afternoon drags by; {clause}.", 0, 3, False),
        ("Come the dawn, {clause}.", 1, 0, False),
        ("A week goes by, and {clause}.", 7, 0, False),
        ("The moon is high when {clause}.", 0, 6, False),
    ),
    clauses=(
        "the gulls fall silent",
        "the rain eases to a drizzle",
        "mist creeps up from the harbour",
        "a cold wind rattles the shutters",
        "the lamps are lit one by one",
        "the river runs high and brown",
    ),
    refuse_move=(
        "You get halfway to {place} before a rockfall blocks the way, and you come back.",
        '"Nobody goes to {place} tonight," the watchman says, and he will not let you pass.',
        "You try the road to {place}, but it lies deep in snow, and you give up.",
        "{Place} will have to wait: the bridge is down.",
        "The boatman refuses to take you to {place}, so you stay put.",
    ),
    refuse_take=(
        "You reach for {item}, but it is chained to the post.",
        "{Item} will not budge, however hard you pull.",
        '"Hands off," growls the owner, and {item} stays where it is.',
        "You try to lift {item}, but an old ward throws your hand back.",
    ),
    distract={
        "place": (
            "Nobody you ask has been to {place} in years.",
            "You picture {place} as it was when you were a child.",
            '"Meet me at {place} when the bells stop," {person} murmurs.',
            "If you were sensible, you would go to {place}. You are not sensible.",
            "A weathered sign points the way to {place}.",
        ),
        "item": (
            "{Item} is not yours, and you leave it alone.",
            '"Don\'t touch {item}," {person} warns.',
            "You nearly pocket {item}, then think better of it.",
            "{person} eyes {item} but does not reach for it.",
            "Your grandmother kept one just like the {bare} by her stove.",
        ),
        "held": (
            "You keep a tight grip on {item}.",
            "{Item} is still safe in your pack, you are glad to find.",
            '"What\'s that you have there, {item}?" {person} asks.',
            "You think about selling {item}, but not today.",
            "For a moment you think you have lost {item}, but no: it is still there.",
        ),
        "person": (
            "You half expect {other} to walk in, but nobody does.",
            '"{other} is coming," {person} says, "but not today."',
            "Word is that {other} drowned last spring, though nobody saw the body.",
            "A letter from {other} waits for you here, unopened.",
            "{person} wonders aloud whether {other} will ever come back.",
        ),
        "time": (
            '"Tomorrow at noon," {person} says. "Not before."',
            "Morning seems a long way off.",
            "The clock on the wall stopped at midnight long ago.",
            "{person} complains that the evenings here last forever.",
            "Yesterday feels like a week ago.",
        ),
    },
    scenery=(
        "Somewhere above, floorboards creak.",
        "A kettle begins to sing.",
        "The candle gutters, then steadies.",
        "Wet wool and woodsmoke: the whole place smells of them.",
        "A cat watches you from a rafter.",
        "Outside, someone is humming a tune you almost know.",
    ),
    after_take=("Its weight is reassuring.", "It has seen better days, but it will do."),
    after_move=("A few heads turn your way, then turn back.", "The floor is sticky underfoot."),
    player={
        "move.do": (
            "hurry to {place}",
            "go over to {place}",
            "sneak into {place}",
            "visit {place}",
            "take the road to {place}",
        ),
        "move.story": (
            "Without a word, I slip out and make for {place}.",
            "I go on to {place}, the long way round.",
            "My feet take me to {place}.",
        ),
        "move.say": (
            "We're off to {place}, then.",
            "Right, {place} it is. Follow me.",
            "To {place}, and quickly.",
        ),
        "take.do": (
            "lift {item}",
            "snag {item}",
            "stash {item} in my pack",
            "loot {bare}",
            "help myself to {item}",
        ),
        "take.story": (
            "I slip {item} into my coat when no one is watching.",
            "Without a second thought, I claim {item}.",
            "My hand closes on {item}.",
        ),
        "take.say": ("How much for {item}?", "Would anyone object if I took {item}?"),
        "receive.do": ("beg {person} for {item}", "ask {person} to lend me {item}"),
        "receive.say": (
            "{person}, would you let me have {item}?",
            "Could you spare {item}, {person}?",
        ),
        "drop.do": (
            "leave {bare} on the floor",
            "discard {item}",
            "get rid of {item}",
            "abandon {item}",
        ),
        "drop.story": (
            "I let {item} slide to the ground.",
            "I'm done carrying {item}; I set it down here.",
        ),
        "give.do": (
            "pass {item} to {person}",
            "let {person} have {item}",
            "hand over {item} to {person}",
            "present {person} with {item}",
            "hand {bare} over to {person}",
        ),
        "give.story": ("I press {item} into {person}'s palm.", "I offer {person} {item}."),
        "give.say": ("Here, {person}, take {item}.", "{person}, {item} is yours now."),
        "kill.do": ("stab {person}", "cut {person} down", "strike at {person}"),
        "idle.do": (
            "examine the walls",
            "stand by the window",
            "think",
            "talk to {person}",
            "ask {person} what happened here",
        ),
        "idle.story": ("I lean against the wall and watch.", "I keep my head down and listen."),
        "idle.say": (
            "Does anyone here know {other}?",
            "Strange weather we're having.",
            "Who runs {place}?",
            "Any news from the road, {person}?",
        ),
    },
)
WORDINGS = {"tuned": TUNED, "fresh": FRESH}  # and the unseen set: ``generator.WORDINGS``
