//! The parsed form of a CEL expression, with the source offset of every node.

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// `1`, `-2`, `0x1F`.
    Int(i64),
    /// `1u`.
    Uint(u64),
    /// `1.5`, `1e3`.
    Double(f64),
    /// `'a'`, `"a"`, `'''a'''`, `r'a'`.
    String(String),
    /// `b'a'`.
    Bytes(Vec<u8>),
}

/// The comprehension macros cel-go expands (`parser/macro.go`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacroKind {
    /// `e.all(x, p)`.
    All,
    /// `e.exists(x, p)`.
    Exists,
    /// `e.exists_one(x, p)`.
    ExistsOne,
    /// `e.map(x, f)`.
    Map,
    /// `e.map(x, p, f)`.
    MapFilter,
    /// `e.filter(x, p)`.
    Filter,
}

/// One node of the expression tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// Offset, in characters from the start of the source, of the token cel-go locates this
    /// node at: an operator for calls of operators, the `(` of a function call, the `.` of a
    /// field selection, the `[` of an index, the first character otherwise.
    pub offset: usize,
    /// What the node is.
    pub kind: ExprKind,
}

/// The kinds of nodes.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A literal.
    Literal(Literal),
    /// A name: a variable, a comprehension variable or a type name.
    Ident(String),
    /// `operand.field`; `test_only` for the `has(operand.field)` presence test.
    Select {
        /// What is selected from.
        operand: Box<Expr>,
        /// The field name.
        field: String,
        /// Whether this is `has()`.
        test_only: bool,
    },
    /// `operand.?field` or `operand[?index]`: optional selection, not type-checked here.
    OptionalSelect {
        /// What is selected from.
        operand: Box<Expr>,
        /// The field name or index.
        index: Box<Expr>,
    },
    /// A function call, operators included (`_+_`, `_[_]`, `!_`, `_?_:_`, `@in`).
    Call {
        /// The receiver of a member call (`x` in `x.size()`).
        target: Option<Box<Expr>>,
        /// The function name.
        function: String,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `{k: v}`.
    Map(Vec<(Expr, Expr)>),
    /// `Name{field: value}`: message construction, not type-checked here.
    Struct {
        /// The message name.
        name: String,
        /// The field initialisers.
        fields: Vec<(String, Expr)>,
    },
    /// A comprehension macro over `range`.
    Comprehension {
        /// Which macro.
        kind: MacroKind,
        /// The iteration variable.
        var: String,
        /// The list or map iterated over.
        range: Box<Expr>,
        /// The predicate of `all`, `exists`, `exists_one`, `filter`, or the filter of `map(x, p, f)`.
        predicate: Option<Box<Expr>>,
        /// The transform of `map`.
        transform: Option<Box<Expr>>,
    },
}
