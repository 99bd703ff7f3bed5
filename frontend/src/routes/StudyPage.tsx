import { useNavigate, useParams } from "react-router";

import { NotFoundPage } from "./NotFoundPage";
import { StudyView } from "../features/studies";

export function StudyPage() {
  const { studyId = "" } = useParams();
  const navigate = useNavigate();
  const id = Number(studyId);
  if (!Number.isInteger(id) || id < 1) return <NotFoundPage />;
  return <StudyView key={id} studyId={id} onCloned={(clone) => navigate(`/studies/${clone}`)} />;
}
