"""scikit-learn models converted with skl2onnx and run through onyx: labels
must equal scikit-learn's and probabilities agree within 1e-4 on held-out
data (seeded synthetic data, no pandas)."""

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn", reason="scikit-learn is not installed (pip install scikit-learn)")
skl2onnx = pytest.importorskip("skl2onnx", reason="skl2onnx is not installed (pip install skl2onnx)")

import onyx  # noqa: E402
from skl2onnx import to_onnx  # noqa: E402
from skl2onnx.common.data_types import FloatTensorType, StringTensorType  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor, RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402
from sklearn.svm import SVC, SVR  # noqa: E402
from sklearn.tree import DecisionTreeRegressor  # noqa: E402

# ONNX opsets the converted models use; ai.onnx.ml 3 has the tree ensembles'
# *_as_tensor attributes and is what onnxruntime and skl2onnx default to.
OPSETS = {"": 17, "ai.onnx.ml": 3}
PROBA_TOL = 1e-4


def _split(X, y, n_train):
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _classification(n_classes, seed, n=400, features=8):
    X, y = make_classification(
        n_samples=n, n_features=features, n_informative=min(5, features - 1), n_redundant=1 if features > 5 else 0, n_classes=n_classes, random_state=seed
    )
    return _split(X.astype(np.float32), y, n * 3 // 4)


def _run(model_proto, feeds):
    session = onyx.InferenceSession(model_proto.SerializeToString())
    return session.run(None, feeds)


def _check_classifier(clf, X_test, outputs, proba_tol=PROBA_TOL):
    labels, proba = outputs[0], outputs[1]
    if isinstance(proba, list):  # ZipMap: one {label: probability} dict per row
        proba = np.array([[row[c] for c in clf.classes_] for row in proba], dtype=np.float64)
    np.testing.assert_array_equal(np.asarray(labels), clf.predict(X_test))
    expected = clf.predict_proba(X_test)
    assert proba.shape == expected.shape
    diff = np.abs(np.asarray(proba, dtype=np.float64) - expected).max()
    print(f"max |probability - scikit-learn| = {diff:.2e}")  # shown with pytest -s
    assert diff <= proba_tol, f"max probability difference {diff:.3g} > {proba_tol}"
    return diff


@pytest.mark.parametrize("n_classes", [2, 3])
def test_scaler_logistic_regression_pipeline(n_classes):
    X_train, y_train, X_test, _ = _classification(n_classes, seed=1)
    pipe = Pipeline([("scale", StandardScaler()), ("lr", LogisticRegression(max_iter=500))]).fit(X_train, y_train)
    onx = to_onnx(pipe, X_train[:1], target_opset=OPSETS, options={"zipmap": False})
    _check_classifier(pipe, X_test, _run(onx, {onx.graph.input[0].name: X_test}))


@pytest.mark.parametrize("n_classes", [2, 4])
def test_random_forest_classifier(n_classes):
    X_train, y_train, X_test, _ = _classification(n_classes, seed=2)
    # Labels that are not 0..n-1, so a label-mapping slip would show.
    y_train = np.array([3, 7, 11, 19])[y_train]
    rf = RandomForestClassifier(n_estimators=25, max_depth=6, random_state=0).fit(X_train, y_train)
    onx = to_onnx(rf, X_train[:1], target_opset=OPSETS, options={"zipmap": False})
    _check_classifier(rf, X_test, _run(onx, {onx.graph.input[0].name: X_test}))


def test_random_forest_classifier_zipmap_string_labels():
    X_train, y_train, X_test, _ = _classification(3, seed=3)
    y_train = np.array(["ant", "bee", "cow"])[y_train]
    rf = RandomForestClassifier(n_estimators=10, max_depth=5, random_state=0).fit(X_train, y_train)
    onx = to_onnx(rf, X_train[:1], target_opset=OPSETS)  # ZipMap output: a list of dicts
    _check_classifier(rf, X_test, _run(onx, {onx.graph.input[0].name: X_test}))


def test_gradient_boosting_classifier_binary():
    X_train, y_train, X_test, _ = _classification(2, seed=4)
    gb = GradientBoostingClassifier(n_estimators=40, max_depth=3, random_state=0).fit(X_train, y_train)
    onx = to_onnx(gb, X_train[:1], target_opset=OPSETS, options={"zipmap": False})
    _check_classifier(gb, X_test, _run(onx, {onx.graph.input[0].name: X_test}))


def test_gradient_boosting_regressor():
    X, y = make_regression(n_samples=400, n_features=6, noise=5.0, random_state=5)
    X_train, y_train, X_test, _ = _split(X.astype(np.float32), y, 300)
    gb = GradientBoostingRegressor(n_estimators=60, max_depth=3, random_state=0).fit(X_train, y_train)
    onx = to_onnx(gb, X_train[:1], target_opset=OPSETS)
    got = _run(onx, {onx.graph.input[0].name: X_test})[0].ravel()
    expected = gb.predict(X_test)
    # scikit-learn's trees split on float32 thresholds too, so every row
    # reaches the same leaves; only the sum of 60 leaf values differs, kept in
    # float32 by the ONNX op (values are ~1e2, so ~1e-5 relative).
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-3)


def test_decision_tree_regressor_exact_leaves():
    X, y = make_regression(n_samples=200, n_features=4, random_state=6)
    X_train, y_train, X_test, _ = _split(X.astype(np.float32), y, 150)
    tree = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X_train, y_train)
    onx = to_onnx(tree, X_train[:1], target_opset=OPSETS)
    got = _run(onx, {onx.graph.input[0].name: X_test})[0].ravel()
    # One leaf value per row, rounded to float32 by the ONNX attribute.
    np.testing.assert_allclose(got, tree.predict(X_test).astype(np.float32), rtol=1e-7)


# scikit-learn 1.9 deprecates SVC(probability=True) (for CalibratedClassifierCV);
# it still works and is what skl2onnx converts to SVMClassifier's prob_a/prob_b.
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_svc_with_probabilities(kernel, n_classes):
    X_train, y_train, X_test, _ = _classification(n_classes, seed=7, n=300, features=5)
    scaler = StandardScaler().fit(X_train)
    X_train = scaler.transform(X_train).astype(np.float32)
    X_test = scaler.transform(X_test).astype(np.float32)
    svc = SVC(kernel=kernel, probability=True, random_state=0).fit(X_train, y_train)
    onx = to_onnx(svc, X_train[:1], target_opset=OPSETS, options={"zipmap": False})
    outputs = _run(onx, {onx.graph.input[0].name: X_test})
    # SVC.predict votes on the decision values, not on the probabilities, and
    # so does the ONNX op; probabilities come from the same Platt/pairwise
    # coupling, computed in float32 by the op and in float64 by libsvm.
    _check_classifier(svc, X_test, outputs)


def test_svr():
    X, y = make_regression(n_samples=200, n_features=5, noise=1.0, random_state=8)
    X_train, y_train, X_test, _ = _split(X.astype(np.float32), y / 50.0, 150)
    svr = SVR(kernel="rbf", C=10.0).fit(X_train, y_train)
    onx = to_onnx(svr, X_train[:1], target_opset=OPSETS)
    got = _run(onx, {onx.graph.input[0].name: X_test})[0].ravel()
    np.testing.assert_allclose(got, svr.predict(X_test), rtol=1e-4, atol=1e-4)


def _mixed_table(n, seed):
    """Two numeric and two string columns as a numpy object array, plus a label
    that depends on all four."""
    rng = np.random.default_rng(seed)
    age = rng.normal(40, 12, n)
    income = rng.normal(50, 15, n)
    color = rng.choice(["red", "green", "blue"], n)
    size = rng.choice(["S", "M", "L", "XL"], n)
    score = 0.05 * (age - 40) - 0.04 * (income - 50) + (color == "red") * 1.2 - (size == "S") * 0.8
    y = (score + rng.normal(0, 0.5, n) > 0.2).astype(np.int64)
    table = np.empty((n, 4), dtype=object)
    table[:, 0], table[:, 1], table[:, 2], table[:, 3] = age, income, color, size
    return table, y


def test_column_transformer_one_hot_mixed_columns():
    table, y = _mixed_table(400, seed=9)
    train, y_train, test, _ = _split(table, y, 300)
    pre = ColumnTransformer(
        [("num", StandardScaler(), [0, 1]), ("cat", OneHotEncoder(handle_unknown="ignore"), [2, 3])]
    )
    pipe = Pipeline([("pre", pre), ("clf", LogisticRegression(max_iter=500))]).fit(train, y_train)
    # One ONNX input per column; skl2onnx maps the column indices onto them.
    initial_types = [
        ("age", FloatTensorType([None, 1])),
        ("income", FloatTensorType([None, 1])),
        ("color", StringTensorType([None, 1])),
        ("size", StringTensorType([None, 1])),
    ]
    onx = to_onnx(pipe, initial_types=initial_types, target_opset=OPSETS, options={"zipmap": False})
    feeds = {
        "age": test[:, 0:1].astype(np.float32),
        "income": test[:, 1:2].astype(np.float32),
        "color": test[:, 2:3].astype(str).astype(object),
        "size": test[:, 3:4].astype(str).astype(object),
    }
    # scikit-learn sees the float64 numeric columns; the model the float32
    # ones, a rounding of ~1e-7 relative that stays far inside 1e-4.
    _check_classifier(pipe, test, _run(onx, feeds))


def test_column_transformer_with_random_forest():
    table, y = _mixed_table(400, seed=10)
    table[:, 0] = table[:, 0].astype(np.float32)  # float32 values: no split lands between float64 and float32
    table[:, 1] = table[:, 1].astype(np.float32)
    train, y_train, test, _ = _split(table, y, 300)
    pre = ColumnTransformer([("num", "passthrough", [0, 1]), ("cat", OneHotEncoder(handle_unknown="ignore"), [2, 3])])
    pipe = Pipeline([("pre", pre), ("rf", RandomForestClassifier(n_estimators=15, max_depth=5, random_state=0))])
    pipe.fit(train, y_train)
    initial_types = [
        ("age", FloatTensorType([None, 1])),
        ("income", FloatTensorType([None, 1])),
        ("color", StringTensorType([None, 1])),
        ("size", StringTensorType([None, 1])),
    ]
    onx = to_onnx(pipe, initial_types=initial_types, target_opset=OPSETS, options={"zipmap": False})
    feeds = {
        "age": test[:, 0:1].astype(np.float32),
        "income": test[:, 1:2].astype(np.float32),
        "color": test[:, 2:3].astype(str).astype(object),
        "size": test[:, 3:4].astype(str).astype(object),
    }
    _check_classifier(pipe, test, _run(onx, feeds))
