import ReelCore
import ReelJSON

/// The RPG seed: a character, enemies and the current save data, each slice with its own reducer.
///
/// Attacks show what middleware is for: the damage depends on the attacker's attack value, which
/// lives in another slice. Middleware reads it at dispatch time and writes it into the logged
/// action, so each slice reducer stays pure over its own slice and a replay never needs to know
/// what the attacker's stats were.
public enum RPGApp {
    public struct State: StoreState {
        public var character: Character
        public var enemies: [Enemy]
        public var saveData: SaveData

        public init(character: Character, enemies: [Enemy], saveData: SaveData = SaveData()) {
            self.character = character
            self.enemies = enemies
            self.saveData = saveData
        }
    }

    public struct Character: Codable, Equatable, Sendable {
        public var name: String
        public var hp: Int
        public var attack: Int
        public init(name: String, hp: Int, attack: Int) {
            self.name = name
            self.hp = hp
            self.attack = attack
        }
    }

    public struct Enemy: Codable, Equatable, Sendable {
        public var id: String
        public var name: String
        public var hp: Int
        public var attack: Int
        public init(id: String, name: String, hp: Int, attack: Int) {
            self.id = id
            self.name = name
            self.hp = hp
            self.attack = attack
        }
    }

    /// Which save slot the current game came from, and how many times it was loaded.
    public struct SaveData: Codable, Equatable, Sendable {
        public var slot: String?
        public var loads: Int
        public init(slot: String? = nil, loads: Int = 0) {
            self.slot = slot
            self.loads = loads
        }
    }

    /// `rpg/attackEnemy {enemyId}`: the enemy loses the character's attack in HP. Middleware fills
    /// in `damage`.
    public struct AttackEnemy: ActionPayload {
        public static let actionType = "rpg/attackEnemy"
        public static let payloadSchema = JSONSchema.object(
            ["enemyId": JSONSchema.string, "damage": JSONSchema.described(JSONSchema.integer, "filled in by middleware")],
            required: ["enemyId"], description: "The enemy loses the character's attack in HP."
        )
        public static let example: AttackEnemy? = AttackEnemy(enemyId: "slime")
        public var enemyId: String
        public var damage: Int?
        public init(enemyId: String, damage: Int? = nil) {
            self.enemyId = enemyId
            self.damage = damage
        }
    }

    /// `rpg/attackEnemy {target}`, version 2 of its payload (the rules of version 3): the enemy is
    /// named `target`. Version 1's payloads, logged or dispatched, are upcast: `enemyId` becomes
    /// `target`.
    public struct AttackEnemyV2: ActionPayload {
        public static let actionType = "rpg/attackEnemy"
        public static let version = 2
        public static let upcasters = [
            Upcaster(from: 1) { payload throws(ReducerError) in
                guard case .object(var members) = payload, let enemy = members.removeValue(forKey: "enemyId") else {
                    throw .rejected("a version 1 attack names its enemy in 'enemyId'")
                }
                members["target"] = enemy
                return .object(members)
            }
        ]
        public static let payloadSchema = JSONSchema.object(
            ["target": JSONSchema.string, "damage": JSONSchema.described(JSONSchema.integer, "filled in by middleware")],
            required: ["target"], description: "The enemy loses the character's attack in HP."
        )
        public static let example: AttackEnemyV2? = AttackEnemyV2(target: "slime")
        public var target: String
        public var damage: Int?
        public init(target: String, damage: Int? = nil) {
            self.target = target
            self.damage = damage
        }
    }

    /// `rpg/attackCharacter {enemyId}`: the character loses that enemy's attack in HP. Middleware
    /// fills in `damage`.
    public struct AttackCharacter: ActionPayload {
        public static let actionType = "rpg/attackCharacter"
        public static let payloadSchema = JSONSchema.object(
            ["enemyId": JSONSchema.string, "damage": JSONSchema.described(JSONSchema.integer, "filled in by middleware")],
            required: ["enemyId"], description: "The character loses that enemy's attack in HP."
        )
        public static let example: AttackCharacter? = AttackCharacter(enemyId: "goblin")
        public var enemyId: String
        public var damage: Int?
        public init(enemyId: String, damage: Int? = nil) {
            self.enemyId = enemyId
            self.damage = damage
        }
    }

    /// `rpg/setSaveData {slot, character, enemies}`: a save was loaded; character and enemies are
    /// replaced.
    public struct SetSaveData: ActionPayload {
        public static let actionType = "rpg/setSaveData"
        public static let payloadSchema: JSONValue = {
            let character = JSONSchema.object(
                ["name": JSONSchema.string, "hp": JSONSchema.integer, "attack": JSONSchema.integer], required: ["name", "hp", "attack"]
            )
            let enemy = JSONSchema.object(
                ["id": JSONSchema.string, "name": JSONSchema.string, "hp": JSONSchema.integer, "attack": JSONSchema.integer],
                required: ["id", "name", "hp", "attack"]
            )
            return JSONSchema.object(
                ["slot": JSONSchema.string, "character": character, "enemies": JSONSchema.array(of: enemy)],
                required: ["slot", "character", "enemies"], description: "A save was loaded: character and enemies are replaced."
            )
        }()
        public static let example: SetSaveData? = SetSaveData(
            slot: "autosave", character: Character(name: "Hero", hp: 30, attack: 7),
            enemies: [Enemy(id: "slime", name: "Slime", hp: 12, attack: 3)]
        )
        public var slot: String
        public var character: Character
        public var enemies: [Enemy]
        public init(slot: String, character: Character, enemies: [Enemy]) {
            self.slot = slot
            self.character = character
            self.enemies = enemies
        }
    }

    public static let initialState = State(
        character: Character(name: "Hero", hp: 30, attack: 7),
        enemies: [
            Enemy(id: "slime", name: "Slime", hp: 12, attack: 3),
            Enemy(id: "goblin", name: "Goblin", hp: 20, attack: 5),
        ]
    )

    public static let definition = definition(rules: 1)

    /// The game's rules by version: version 2 stops an enemy's HP at zero where version 1 lets it
    /// go below, and refuses an attack on an enemy already at zero; version 3 plays as 2 and
    /// names an attack's enemy `target` (``AttackEnemyV2``, payload version 2, upcast from 1).
    /// Versions of one app, to see what `shadow` and `check-history` tell of a change
    /// (`REEL_RPG_RULES=2 reel-rpg shadow --baseline …`).
    public static func definition(rules: Int) -> StoreDefinition<State> {
        let enrichAttack: any Middleware<State> =
            rules >= 3
            ? Enrich(AttackEnemyV2.self) { attack, state, _ throws(ReducerError) in
                var attack = attack
                attack.damage = state.character.attack
                return attack
            }
            : Enrich(AttackEnemy.self) { attack, state, _ throws(ReducerError) in
                var attack = attack
                attack.damage = state.character.attack
                return attack
            }
        return StoreDefinition(
            name: "rpg", version: "\(rules)", initialState: initialState,
            middleware: [
                enrichAttack,
                Enrich(AttackCharacter.self) { attack, state, _ throws(ReducerError) in
                    guard let enemy = state.enemies.first(where: { $0.id == attack.enemyId }) else {
                        throw .rejected("no enemy '\(attack.enemyId)'")
                    }
                    var attack = attack
                    attack.damage = enemy.attack
                    return attack
                },
            ]
        ) {
            Scope(\State.character) {
                On(AttackCharacter.self) { character, attack throws(ReducerError) in
                    character.hp -= try damage(attack.damage)
                }
                On(SetSaveData.self) { character, save throws(ReducerError) in
                    character = save.character
                }
            }
            Scope(\State.enemies) {
                if rules >= 3 {
                    On(AttackEnemyV2.self) { enemies, attack throws(ReducerError) in
                        try hit(&enemies, attack.target, damage: attack.damage, rules: rules)
                    }
                } else {
                    On(AttackEnemy.self) { enemies, attack throws(ReducerError) in
                        try hit(&enemies, attack.enemyId, damage: attack.damage, rules: rules)
                    }
                }
                On(SetSaveData.self) { enemies, save throws(ReducerError) in
                    enemies = save.enemies
                }
            }
            Scope(\State.saveData) {
                On(SetSaveData.self) { saveData, save throws(ReducerError) in
                    saveData.slot = save.slot
                    saveData.loads += 1
                }
            }
        }
    }

    /// An attack on the enemy `id`, by the rules of `rules`.
    public static func hit(_ enemies: inout [Enemy], _ id: String, damage logged: Int?, rules: Int) throws(ReducerError) {
        guard let index = enemies.firstIndex(where: { $0.id == id }) else { throw .rejected("no enemy '\(id)'") }
        if rules >= 2, enemies[index].hp == 0 { throw .rejected("\(id) is already defeated") }
        enemies[index].hp -= try damage(logged)
        if rules >= 2 { enemies[index].hp = max(0, enemies[index].hp) }
    }

    /// The damage the middleware logged. An attack logged without one did not pass through the
    /// middleware (an import of hand-written actions, say): refuse it rather than guess.
    static func damage(_ damage: Int?) throws(ReducerError) -> Int {
        guard let damage, damage >= 0 else { throw .rejected("an attack needs a non-negative 'damage'") }
        return damage
    }
}
